package cgroup

import (
	"errors"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// ExitLeaf is the cgroup, under a worker's parent, that a worker's shim moves itself into once the worker's
// tree has ended and its end is recorded: a cgroup cannot be removed while anything is in it, and the shim
// removes its worker's cgroup itself so that none is left behind (ADR 0005). On the v2 tree it must be a
// leaf of its own, because a parent with controllers enabled may hold no process. It is empty again as soon
// as the shim has exited; Host.RemoveParentIfEmpty removes it with the parent.
const ExitLeaf = "hlaunch-exit"

// Leave moves pid (a shim that is a member) out of every directory of the group, so that Delete can remove
// them: into <parent>/ExitLeaf on the v2 tree (made, with hlaunch's marker, when missing) and into the
// parent directory on each v1 hierarchy (v1 has no rule against processes in inner cgroups).
func (g *Group) Leave(pid int) error {
	if g.v2 != "" {
		leaf := filepath.Join(filepath.Dir(g.v2), ExitLeaf)
		var err error
		// A concurrent gc may remove an empty leaf between our mkdir and our write: make it again.
		for i := 0; i < 5; i++ {
			if err = ensureLeaf(leaf); err != nil {
				return err
			}
			if err = writeProcs(leaf, pid); !errors.Is(err, unix.ENOENT) {
				break
			}
		}
		if err != nil {
			return err
		}
	}
	for _, d := range g.v1dirs {
		if err := writeFile(filepath.Join(filepath.Dir(d), "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// ensureLeaf makes dir with hlaunch's marker, or accepts it when it exists and carries the marker.
func ensureLeaf(dir string) error {
	err := mkdir(dir)
	if err == nil {
		return mark(dir)
	}
	if !errors.Is(err, unix.EEXIST) {
		return err
	}
	return waitMarked(dir)
}

// removeExitLeaf removes parent's ExitLeaf in dir (one hierarchy's parent directory) when it is hlaunch's
// and empty; a missing leaf is not an error, a busy one is ErrPopulated.
func removeExitLeaf(pdir string) error {
	leaf := filepath.Join(pdir, ExitLeaf)
	ok, err := marked(leaf)
	if errors.Is(err, unix.ENOENT) || (err == nil && !ok) {
		return nil // none, or not ours: the parent's own removal decides
	}
	if err != nil {
		return err
	}
	if err := rmdir(leaf); err != nil && !errors.Is(err, unix.ENOENT) {
		if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.ENOTEMPTY) {
			return ErrPopulated
		}
		return err
	}
	return nil
}
