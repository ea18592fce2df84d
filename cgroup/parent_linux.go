package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// usableParent decides whether an existing parent directory may hold hlaunch's workers: it must be
// writable by this process, then carry hlaunch's marker. It is the one decision behind Create and
// CheckParent (hlaunch doctor), so both name the same condition the same way. A non-root caller cannot
// read trusted.* attributes at all, so a parent root made (marked trusted.hlaunch) is, to it, first of
// all not writable, and only if it was handed over (chowned) without a user.hlaunch marker, not ours.
func usableParent(dir string) error {
	if err := unix.Access(dir, unix.W_OK); err != nil {
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

// CheckParent says whether Create could place workers under parent on this host, creating nothing: it
// returns the parent's directory in the primary hierarchy and nil, or why not: ErrBadParent,
// ErrNotWritable (the parent, or the deepest existing directory above a missing one, is not writable by
// this process), ErrNotOurs (an existing parent without hlaunch's marker).
func (h *Host) CheckParent(parent string) (string, error) {
	parent, err := cleanParent(parent)
	if err != nil {
		return "", err
	}
	root := h.Unified
	if root == "" {
		for _, c := range sortedKeys(h.V1) {
			root = h.V1[c]
			break
		}
	}
	if root == "" {
		return "", ErrNotFound
	}
	dir := filepath.Join(root, parent)
	if _, err := os.Stat(dir); err == nil {
		return dir, usableParent(dir)
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			if err := unix.Access(d, unix.W_OK); err != nil {
				return dir, notWritable(d, err)
			}
			return dir, nil
		}
		if d == root || d == "/" {
			return dir, fmt.Errorf("%w: %s", ErrNotFound, root)
		}
	}
}
