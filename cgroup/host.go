package cgroup

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"
	"sync/atomic"
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
	var mounts []mountEntry
	sc := bufio.NewScanner(r)
	// 4 KiB to start (a mountinfo line rarely needs more), up to 1 MiB for the longest: a 64 KiB start was
	// a large allocation, zeroed and page-faulted in every short-lived hlaunch process (ADR 0006).
	sc.Buffer(make([]byte, 0, 4096), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		left, right, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		lf := strings.Fields(left)
		rf := strings.Fields(right)
		if len(lf) < 5 || len(rf) < 1 {
			continue
		}
		m := mountEntry{mountpoint: unescapeMount(lf[4]), fstype: rf[0]}
		if len(rf) >= 3 {
			m.superOpts = rf[2]
		}
		mounts = append(mounts, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cgroup: reading mountinfo: %w", err)
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

// unescapeMount undoes mountinfo's octal escapes (\040 for space, \011, \012, \134).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1:i+4]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 || s[0] > '3' {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return true
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
	for _, c := range strings.Split(parent, "/") {
		if c == ".." {
			return "", fmt.Errorf("%w: %q contains \"..\"", ErrBadParent, parent)
		}
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
