package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// ErrSystemdTree is returned by DefaultParent where systemd manages the cgroup tree and the caller is not
// inside a subtree systemd delegated (a unit with Delegate=yes): hlaunch does not make cgroups in a tree
// that another manager owns unless it is told where (--cgroup-parent).
var ErrSystemdTree = errors.New("cgroup: systemd manages this host's cgroup tree and the caller is not in a delegated subtree")

// systemdManaged reports whether systemd is this host's (or container's) manager: PID 1 is systemd and it
// says so in /run/systemd/system (sd_booted). Both, because a private test manager's mount namespace has
// the directory without the PID 1.
func systemdManaged() bool {
	if st, err := os.Stat("/run/systemd/system"); err != nil || !st.IsDir() {
		return false
	}
	b, err := os.ReadFile("/proc/1/comm")
	return err == nil && strings.TrimSpace(string(b)) == "systemd"
}

// DefaultParent is the cgroup parent a launch uses when none is named. On a host that systemd does not
// manage it is DefaultParent ("hlaunch", at the root of each hierarchy). Where systemd manages the tree
// (a pure-v2 host with systemd as PID 1: it owns /sys/fs/cgroup and may remove or re-parent what it does
// not know), the parent is "hlaunch" inside the caller's own delegated subtree: the nearest ancestor of
// the caller's cgroup that systemd marked delegated (trusted.delegate or user.delegate, systemd 251+),
// unless that is a user manager's own tree (user@UID.service); otherwise it is ErrSystemdTree, naming the
// caller's cgroup.
func (h *Host) DefaultParent() (string, error) {
	if !systemdManaged() {
		return DefaultParent, nil
	}
	if h.Mode != Unified || h.Unified == "" {
		return "", fmt.Errorf("%w (a %s host: delegation is a cgroup2 matter)", ErrSystemdTree, h.Mode)
	}
	own, err := ProcCgroup2(0)
	if err != nil {
		return "", err
	}
	for p := own; p != "/"; p = path.Dir(p) {
		if !delegated(filepath.Join(h.Unified, p)) {
			continue
		}
		// user@UID.service is delegated by the system manager to a user manager, which owns that tree as
		// systemd owns the root (and, in systemd 252, marks none of its own Delegate=yes units): not ours.
		if b := path.Base(p); strings.HasPrefix(b, "user@") && strings.HasSuffix(b, ".service") {
			return "", fmt.Errorf("%w (hlaunch runs in %s; %s is a user manager's own tree)", ErrSystemdTree, own, p)
		}
		return path.Join(p, DefaultParent), nil
	}
	return "", fmt.Errorf("%w (hlaunch runs in %s)", ErrSystemdTree, own)
}

// delegated reports whether systemd marked dir as a delegated subtree.
func delegated(dir string) bool {
	var buf [4]byte
	for _, name := range []string{"trusted.delegate", "user.delegate"} {
		n, err := unix.Getxattr(dir, name, buf[:])
		if err == nil && n == 1 && buf[0] == '1' {
			return true
		}
	}
	return false
}

// ProcCgroup2 is pid's cgroup2 path (the "0::" line of /proc/<pid>/cgroup; 0 means this process), as
// this process's cgroup namespace names it, which is how its cgroupfs mount names it too. A cgroup
// outside that namespace's root reads as a path of ".." components ("/../../x") and has no name under the
// mount: it is ErrOutsideNamespace, never cleaned into a name inside (path.Clean makes "/../../x" "/x", a
// different cgroup).
func ProcCgroup2(pid int) (string, error) {
	name := "/proc/self/cgroup"
	if pid != 0 {
		name = fmt.Sprintf("/proc/%d/cgroup", pid)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	pc, err := linux.ParseProcCgroup(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if pc.V2 == "" {
		return "", fmt.Errorf("%w: no cgroup2 line in %s", ErrNotFound, name)
	}
	return cleanProcCgroup(pc.V2, name)
}

// cleanProcCgroup cleans a "0::" path read from name, refusing one that leaves the namespace's root.
func cleanProcCgroup(p, name string) (string, error) {
	// ParseProcCgroup has checked that p is absolute. Check components before cleaning, as cleanParent does: cleaning would hide the escape.
	if slices.Contains(strings.Split(p, "/"), "..") {
		return "", &OutsideNamespaceError{File: name, Path: p}
	}
	return path.Clean(p), nil
}
