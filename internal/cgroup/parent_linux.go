package cgroup

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// usableParent decides whether an existing parent directory may hold hlaunch's workers: it must be
// writable by this process, then carry hlaunch's marker. It is the one decision behind Create and
// CheckParent (hlaunch doctor), so both name the same condition the same way. A non-root caller cannot
// read trusted.* attributes at all, so a parent root made (marked trusted.hlaunch) is, to it, first of
// all not writable, and only if it was handed over (chowned) without a user.hlaunch marker, not ours.
func usableParent(dir string) error {
	if err := unix.Access(dir, unix.W_OK); errors.Is(err, unix.ENOENT) {
		// Found a moment ago, gone now: a concurrent `hlaunch gc` removes a parent once it is empty.
		return fmt.Errorf("cgroup: parent %s removed meanwhile: %w", dir, err)
	} else if err != nil {
		return notWritable(dir, err)
	}
	err := waitMarked(dir)
	if errors.Is(err, ErrNotOurs) && os.Geteuid() != 0 {
		return fmt.Errorf("%w (no user.hlaunch marker; a parent made by root is marked trusted.hlaunch, which only root can read)", err)
	}
	return err
}

// notWritable is ErrNotWritable for dir, naming the caller's uid.
func notWritable(dir string, err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		err = errno
	}
	return fmt.Errorf("%w: %s by uid %d: %v", ErrNotWritable, dir, os.Geteuid(), err)
}

// CheckParent says whether Create could place a worker with limits lim under parent on this host,
// creating nothing: it checks the parent in every hierarchy Create would use for lim (the v2 tree, and on
// a hybrid or legacy host the v1 hierarchies of lim's controllers and the freezer), in the order Create
// makes them, and returns the parent's directory in the primary hierarchy and nil, or why not:
// ErrBadParent, ErrUnsupportedLimit, ErrNotWritable (the parent, or the deepest existing directory above
// a missing one, is not writable by this process), ErrNotOurs (an existing parent without hlaunch's
// marker). Checking one hierarchy only would pass a parent that Create then refuses in another.
func (h *Host) CheckParent(parent string, lim Limits) (string, error) {
	parent, err := cleanParent(parent)
	if err != nil {
		return "", err
	}
	if err := lim.validate(); err != nil {
		return "", err
	}
	p, err := h.plan(lim)
	if err != nil {
		return "", err
	}
	var roots []string
	if h.Unified != "" {
		roots = append(roots, h.Unified)
	}
	seen := map[string]bool{}
	for _, c := range slices.Sorted(maps.Keys(p.v1)) {
		if mp := p.v1[c]; !seen[mp] {
			seen[mp] = true
			roots = append(roots, mp)
		}
	}
	if len(roots) == 0 {
		return "", ErrNotFound
	}
	primary := roots[0]
	if h.Unified == "" && p.v1["freezer"] != "" {
		primary = p.v1["freezer"] // as Group.finish picks it
	}
	for _, root := range roots {
		if err := checkParentIn(root, parent); err != nil {
			return filepath.Join(primary, parent), err
		}
	}
	return filepath.Join(primary, parent), nil
}

// checkParentIn is CheckParent for one hierarchy mounted at root.
func checkParentIn(root, parent string) error {
	dir := filepath.Join(root, parent)
	if _, err := os.Stat(dir); err == nil {
		return usableParent(dir)
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			if err := unix.Access(d, unix.W_OK); err != nil {
				return notWritable(d, err)
			}
			return nil
		}
		if d == root || d == "/" {
			return fmt.Errorf("%w: %s", ErrNotFound, root)
		}
	}
}

// ensureParent creates root+parent (and missing ancestors below root) with the marker, or checks that an
// existing parent is usable (usableParent: writable, then marked). A parent it makes itself is returned as
// fresh and left unmarked: the caller marks it once the worker is in it (markFresh). Until then a
// concurrent RemoveParentIfEmpty refuses it as not ours, and afterwards the worker keeps it busy, so a
// parent made here is never removed empty under its first worker's Create.
func ensureParent(root, parent string, cr *creation) (fresh string, err error) {
	dir := root
	comps := strings.Split(strings.TrimPrefix(parent, "/"), "/")
	for i, c := range comps {
		dir = filepath.Join(dir, c)
		last := i == len(comps)-1
		err := mkdir(dir)
		if err == nil {
			cr.dirs = append(cr.dirs, dir)
			if last {
				return dir, nil
			}
			if err := mark(dir); err != nil {
				return "", err
			}
			continue
		}
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return "", notWritable(filepath.Dir(dir), err)
		}
		if !errors.Is(err, unix.EEXIST) {
			return "", err
		}
		if !last {
			continue // an existing ancestor above our parent need not be ours; we never write to it
		}
		if err := usableParent(dir); err != nil {
			return "", err
		}
	}
	return "", nil
}

// markFresh marks the parent ensureParent made (fresh), if it made one, once the worker is in it.
func markFresh(fresh string) error {
	if fresh == "" {
		return nil
	}
	return mark(fresh)
}

// waitMarked accepts an existing parent only if it carries the marker. A concurrent Create may have made
// the directory a moment ago and not marked it yet (it marks it once its worker is in it: ensureParent),
// so an unmarked parent gets a short grace (about 100 ms) before refusal.
func waitMarked(dir string) error {
	for i := 0; ; i++ {
		ok, err := marked(dir)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if i == 50 {
			return fmt.Errorf("%w: %s", ErrNotOurs, dir)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// RemoveParentIfEmpty removes the parent's directory in every hierarchy where it exists, if hlaunch made it
// and it has no children left (ErrPopulated otherwise). It checks every hierarchy before removing anything.
func (h *Host) RemoveParentIfEmpty(parent string) error {
	parent, err := cleanParent(parent)
	if err != nil {
		return err
	}
	var dirs []string
	roots := []string{}
	if h.Unified != "" {
		roots = append(roots, h.Unified)
	}
	seen := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(h.V1)) {
		if mp := h.V1[k]; !seen[mp] && h.Mode != Unified {
			seen[mp] = true
			roots = append(roots, mp)
		}
	}
	for _, r := range roots {
		d := filepath.Join(r, parent)
		if _, err := os.Lstat(d); err != nil {
			continue
		}
		ok, err := marked(d)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s", ErrNotOurs, d)
		}
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		// The shims' exit leaf (ExitLeaf) goes first; a shim in it right now keeps the parent.
		if err := removeExitLeaf(d); err != nil {
			return err
		}
		if err := rmdir(d); err != nil {
			if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.ENOTEMPTY) {
				return fmt.Errorf("%w: %v", ErrPopulated, err)
			}
			if !errors.Is(err, unix.ENOENT) {
				return err
			}
		}
	}
	return nil
}
