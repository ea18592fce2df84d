package cgroup

import (
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/hlaunch/hlaunch/internal/mountinfo"
)

// Mode is how cgroups are mounted on a host.
type Mode string

const (
	// Unified is a pure cgroup v2 host: one cgroup2 tree holds every controller.
	Unified Mode = "unified"
	// Hybrid has v1 controller hierarchies plus a cgroup2 tree (usually at /sys/fs/cgroup/unified) that
	// holds process membership and whichever controllers v1 did not claim.
	Hybrid Mode = "hybrid"
	// Legacy is a v1-only host: no cgroup2 tree.
	Legacy Mode = "legacy"
)

// DefaultParent is the parent used when CleanParent is given "".
const DefaultParent = "hlaunch"

// Host is the cgroup layout of one host (or one mount namespace). Detect it once and reuse it for every
// launch; a Host is safe for concurrent use once built.
type Host struct {
	// Mode is the host's cgroup mode.
	Mode Mode
	// Unified is the cgroup2 mount point, or "" on a legacy host.
	Unified string
	// V1 maps a v1 controller name ("memory", "pids", "cpu", "cpuacct", "freezer", ...) or a named
	// hierarchy ("name=systemd") to its mount point. Co-mounted controllers share a mount point.
	// Nil or empty on a unified host.
	V1 map[string]string

	// Logf, when set, receives the one-time notes about fallbacks (such as freeze-kill-thaw instead of
	// cgroup.kill). Nil means silent.
	Logf func(format string, args ...any)
	// NoKillFallback forbids Kill's freeze-kill-thaw fallback where cgroup.kill is missing; Kill then
	// fails with ErrFallbackForbidden.
	NoKillFallback bool

	// fallbackSaid makes the fallback note appear once per Host, not once per kill.
	fallbackSaid atomic.Bool
}

// v1Controllers are the controllers a v1 "cgroup" mount's super options may name.
var v1Controllers = map[string]bool{
	"cpuset": true, "cpu": true, "cpuacct": true, "blkio": true, "memory": true, "devices": true,
	"freezer": true, "net_cls": true, "perf_event": true, "net_prio": true, "hugetlb": true, "pids": true,
	"rdma": true, "misc": true, "debug": true,
}

type mountEntry struct {
	mountpoint string
	fstype     string
	superOpts  string
}

// ParseMountinfo reads /proc/<pid>/mountinfo text and returns the cgroup layout it describes. A mount that a
// later mount hides (same or enclosing mount point) is ignored, so a tmpfs mounted over /sys/fs/cgroup in a
// private mount namespace hides the host's hierarchies under it. When a hierarchy is mounted twice, the
// first visible mount wins. It fails with ErrNotFound when no cgroup hierarchy is mounted.
func ParseMountinfo(r io.Reader) (*Host, error) {
	entries, err := mountinfo.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("cgroup: reading %w", err)
	}
	mounts := make([]mountEntry, len(entries))
	for i, e := range entries {
		mounts[i] = mountEntry{mountpoint: e.MountPoint, fstype: e.FSType, superOpts: e.SuperOpts}
	}
	h := &Host{V1: map[string]string{}}
	controllers := false
	for i, m := range mounts {
		if m.fstype != "cgroup" && m.fstype != "cgroup2" {
			continue
		}
		if hidden(mounts, i) {
			continue
		}
		if m.fstype == "cgroup2" {
			if h.Unified == "" {
				h.Unified = m.mountpoint
			}
			continue
		}
		for _, o := range strings.Split(m.superOpts, ",") {
			if strings.HasPrefix(o, "name=") || v1Controllers[o] {
				if _, dup := h.V1[o]; !dup {
					h.V1[o] = m.mountpoint
				}
				if v1Controllers[o] {
					controllers = true
				}
			}
		}
	}
	switch {
	case h.Unified != "" && !controllers:
		h.Mode = Unified
	case h.Unified != "":
		h.Mode = Hybrid
	case controllers:
		h.Mode = Legacy
	default:
		return nil, fmt.Errorf("cgroup: no cgroup hierarchy mounted: %w", ErrNotFound)
	}
	if len(h.V1) == 0 {
		h.V1 = nil
	}
	return h, nil
}

// hidden reports whether a mount later in the table sits on or above mounts[i]'s mount point.
func hidden(mounts []mountEntry, i int) bool {
	mp := mounts[i].mountpoint
	for _, later := range mounts[i+1:] {
		lp := later.mountpoint
		if lp == mp || lp == "/" || strings.HasPrefix(mp, lp+"/") {
			return true
		}
	}
	return false
}

// CleanParent validates a --cgroup-parent value and returns it in cgroup form, "/a/b", relative to each
// hierarchy's root. "" means DefaultParent. A leading "/" only anchors the path at the root; ".", empty
// components and trailing slashes are dropped. Any ".." component, a NUL or newline, or a path that names
// the root itself is refused with ErrBadParent: a parent must stay strictly inside the root so hlaunch never
// writes to cgroups it does not own.
func (h *Host) CleanParent(parent string) (string, error) {
	return cleanParent(parent)
}

func cleanParent(parent string) (string, error) {
	if parent == "" {
		parent = DefaultParent
	}
	if strings.ContainsAny(parent, "\x00\n") {
		return "", fmt.Errorf("%w: %q contains a control character", ErrBadParent, parent)
	}
	// Check components before cleaning: path.Clean would turn "/../x" into "/x" and hide the escape.
	if slices.Contains(strings.Split(parent, "/"), "..") {
		return "", fmt.Errorf("%w: %q contains \"..\"", ErrBadParent, parent)
	}
	p := path.Clean("/" + parent)
	if p == "/" {
		return "", fmt.Errorf("%w: %q names the hierarchy root", ErrBadParent, parent)
	}
	return p, nil
}

// checkName validates a worker name: one path component, no "..", no control characters.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00\n") {
		return fmt.Errorf("%w: bad worker name %q", ErrBadParent, name)
	}
	return nil
}
