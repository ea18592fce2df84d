package cgroup

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// Group is one worker's cgroup across the hierarchies it lives in: the v2 directory (identity, kill, events
// and, on a unified host, limits) and, on hybrid and legacy hosts, one directory per v1 hierarchy a limit
// needs (plus freezer on legacy). Make one with Host.Create or Host.Load; methods are safe for concurrent use.
type Group struct {
	host    *Host
	path    string            // "/parent/name", relative to every hierarchy root
	v2      string            // absolute v2 directory, or ""
	v1      map[string]string // v1 controller -> absolute directory (co-mounted controllers share one)
	v1dirs  []string          // distinct v1 directories, sorted
	primary string            // v2 directory, else the freezer directory
	id      uint64
	limits  Limits
	scope   bool // held by Host.Hold as a systemd scope: the manager's, never removed here
}

// finish fills the derived fields after v2 and v1 are known.
func (g *Group) finish() {
	seen := map[string]bool{}
	g.v1dirs = g.v1dirs[:0]
	for _, d := range g.v1 {
		if !seen[d] {
			seen[d] = true
			g.v1dirs = append(g.v1dirs, d)
		}
	}
	slices.Sort(g.v1dirs)
	switch {
	case g.v2 != "":
		g.primary = g.v2
	case g.v1["freezer"] != "":
		g.primary = g.v1["freezer"]
	case len(g.v1dirs) > 0:
		g.primary = g.v1dirs[0]
	}
}

// Path is the worker's cgroup path relative to the hierarchy roots, e.g. "/hlaunch/w-1a2b".
func (g *Group) Path() string { return g.path }

// ID is the inode number of the v2 directory (the kernel's cgroup id, as in bpf and /proc/<pid>/fdinfo),
// or of the primary (freezer) directory on a legacy host.
func (g *Group) ID() uint64 { return g.id }

// Dir is the absolute v2 directory, or the primary v1 directory on a legacy host.
func (g *Group) Dir() string { return g.primary }

// Limits returns the limits applied at Create (or recorded on the directory, for a loaded group).
func (g *Group) Limits() Limits { return g.limits }

// OpenFD opens the v2 directory O_PATH|O_DIRECTORY|O_CLOEXEC for SysProcAttr.CgroupFD (clone3
// CLONE_INTO_CGROUP), which places the child before its first instruction. The caller closes it. It fails
// with ErrNoUnified on a legacy host.
func (g *Group) OpenFD() (*os.File, error) {
	if g.v2 == "" {
		return nil, ErrNoUnified
	}
	var fd int
	err := linux.RetryErr(func() (err error) {
		fd, err = unix.Open(g.v2, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: g.v2, Err: err}
	}
	return os.NewFile(uintptr(fd), g.v2), nil
}

// NeedsJoin reports whether a process must be written into v1 hierarchies after it starts (hybrid and
// legacy hosts with v1 directories). When false, clone3 into OpenFD places it completely.
func (g *Group) NeedsJoin() bool { return len(g.v1dirs) > 0 }

// Join writes pid into the group's directory in every v1 hierarchy. Use it while the child is held on the
// launch handshake, after a clone3 into the v2 directory.
func (g *Group) Join(pid int) error {
	for _, d := range g.v1dirs {
		if err := writeProcs(d, pid); err != nil {
			return err
		}
	}
	return nil
}

// JoinAll writes pid into the v2 directory too, for starts that did not use clone3 CLONE_INTO_CGROUP.
func (g *Group) JoinAll(pid int) error {
	if g.v2 != "" {
		if err := writeProcs(g.v2, pid); err != nil {
			return err
		}
	}
	return g.Join(pid)
}

// writeProcs moves pid into dir. A task still in TASK_NEW makes the kernel answer EINVAL; runc and
// containerd retry that, and so do we, briefly.
func writeProcs(dir string, pid int) error {
	p := filepath.Join(dir, "cgroup.procs")
	var err error
	for i := 0; i < 5; i++ {
		if err = writeFile(p, strconv.Itoa(pid)); !errors.Is(err, unix.EINVAL) {
			return err
		}
		sleepBackoff(i)
	}
	return err
}

// Procs returns the PIDs in the group, the union over its hierarchies (each including sub-cgroups), sorted.
func (g *Group) Procs() ([]int, error) {
	set := map[int]struct{}{}
	for _, d := range append([]string{g.v2}, g.v1dirs...) {
		if d == "" {
			continue
		}
		// Sub-cgroups count: a worker may nest its own cgroups below its one.
		pids, err := subtreePids(d)
		if err != nil {
			return nil, err
		}
		for _, p := range pids {
			set[p] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// Populated reports whether anything is left: v2 cgroup.events "populated 1" (which counts the whole
// subtree), or a member in any v1 directory or below it. Only Populated()==false counts as empty; an error is
// never "empty".
func (g *Group) Populated() (bool, error) {
	if g.v2 != "" {
		ev, err := readEvents(g.v2)
		if err != nil {
			return true, err
		}
		if ev.Populated {
			return true, nil
		}
	}
	for _, d := range g.v1dirs {
		// v1 has no cgroup.events: walk the subtree as Procs does, since a worker may nest its own cgroups.
		pids, err := subtreePids(d)
		if err != nil {
			return true, err
		}
		if len(pids) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// Delete removes the group's directory in every hierarchy, nested cgroups first (depth-first, as a
// worker may have made its own below its one). It fails with ErrNotOurs for a scope (Host.Hold); with a
// *PopulatedError (errors.Is ErrPopulated) naming the directory while a process remains in the group or a
// descendant (kill first); and with the rmdir's own error when removal failed for another reason. A
// directory already gone is not an error.
func (g *Group) Delete() error {
	if g.scope {
		return fmt.Errorf("%w: %s is a systemd scope; its manager removes it", ErrNotOurs, g.path)
	}
	dirs := append(append([]string{}, g.v1dirs...), g.v2)
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if pids, err := subtreePids(d); err != nil {
			return err
		} else if len(pids) > 0 {
			return &PopulatedError{Dir: d, PIDs: pids}
		}
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if err := removeTree(d, 0); err != nil {
			return err
		}
	}
	return nil
}

// maxNesting bounds the depth Delete and subtreePids descend to; the kernel's own default
// (cgroup.max.depth) is unbounded, so a worker could nest deeper, and then its group is not removed.
const maxNesting = 64

// removeTree removes dir and every cgroup below it, children before parents.
func removeTree(dir string, depth int) error {
	if depth > maxNesting {
		return fmt.Errorf("cgroup: %s: nested deeper than %d", dir, maxNesting)
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cgroup: delete %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name()), depth+1); err != nil {
				return err
			}
		}
	}
	return rmdirRetry(dir)
}

// subtreePids lists the processes in dir and every cgroup below it; a directory already gone holds none.
func subtreePids(dir string) ([]int, error) {
	set := map[int]struct{}{}
	err := walkDirs(dir, 0, func(d string) error {
		err := readPids(filepath.Join(d, "cgroup.procs"), set)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENODEV) {
			return nil // removed while we looked: rmdir succeeds only on an empty cgroup
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cgroup: procs of %s: %w", dir, err)
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// walkDirs calls fn for dir and every directory below it, parents first.
func walkDirs(dir string, depth int, fn func(string) error) error {
	if depth > maxNesting {
		return fmt.Errorf("%s: nested deeper than %d", dir, maxNesting)
	}
	if err := fn(dir); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := walkDirs(filepath.Join(dir, e.Name()), depth+1, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// rmdirRetry tolerates the short window after the last member exits in which the kernel still answers
// EBUSY (the css is being released). Still EBUSY after that, it looks again: a process there is a
// *PopulatedError; otherwise the rmdir's error is returned as it is.
func rmdirRetry(d string) error {
	var err error
	for i := 0; i < 20; i++ {
		err = rmdir(d)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return err
		}
		sleepBackoff(i)
	}
	if pids, perr := subtreePids(d); perr == nil && len(pids) > 0 {
		return &PopulatedError{Dir: d, PIDs: pids}
	}
	return err
}
