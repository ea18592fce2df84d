package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Claim is what hlaunch recorded about a worker's cgroup when it started the worker: the record in the
// state directory (or, in the worker's own shim, the launcher's config and the identity it captured).
// Host.Hold accepts a live cgroup only when it matches the claim.
type Claim struct {
	// Path is the cgroup relative to the hierarchy roots, as Group.Path and the identity name it.
	Path string
	// ID is the v2 directory's inode (the kernel's cgroup id) recorded at start. Required for a scope;
	// 0 for a raw cgroup means "not recorded" (an unverified capture), and only the markers decide.
	ID uint64
	// Worker is the worker id of a raw cgroup hlaunch made: the directory's own name.
	Worker string
	// Unit is the systemd scope's unit name ("<name>.scope"), the directory's own name; "" for a raw
	// cgroup.
	Unit string
	// InvocationID is the scope's InvocationID the manager answered at start (32 hex).
	InvocationID string
}

// invocationXattr is where systemd's system manager records a unit's InvocationID on its cgroup
// (user.invocation_id where trusted.* is refused); a user manager of systemd 252 records none.
const (
	invocationTrusted = "trusted.invocation_id"
	invocationUser    = "user.invocation_id"
)

// Hold attaches to the worker cgroup a Claim names, without changing anything, and is the one place that
// decides "this cgroup is this worker's". Both kinds must sit at the recorded path, carry the recorded
// name as their last component, and (when recorded) have the recorded cgroup id: a cgroup id is never
// reused within a boot, so an id match proves it is the very directory that existed at start.
//
//   - A raw cgroup (Unit ""): hlaunch's ownership marker on the worker's own directory and on its parent
//     (hlaunch made both), the directory named after the worker id. A parent of several workers, another
//     tool's cgroup, or a marked directory that is not a worker's own is ErrNotOurs.
//   - A systemd scope (Unit set): systemd made it, so it carries no marker of hlaunch's. It is held on the
//     recorded cgroup id and unit name instead, and on the InvocationID wherever the manager wrote it on
//     the directory (a system manager does: trusted.invocation_id); a differing InvocationID is ErrNotOurs.
//     A held scope is never removed (Delete refuses it): the manager collects it.
//
// It fails with ErrBadParent for a path that is not a worker path, ErrNotFound when the directory is
// missing, ErrNotOurs when a witness does not match, ErrNoUnified for a scope on a legacy host.
func (h *Host) Hold(c Claim) (*Group, error) {
	rel, err := cleanParent(c.Path)
	if err != nil {
		return nil, err
	}
	if rel != c.Path {
		return nil, fmt.Errorf("%w: %q is not in canonical form", ErrBadParent, c.Path)
	}
	if c.Unit != "" {
		return h.holdScope(rel, c)
	}
	if c.Worker == "" || checkName(c.Worker) != nil || path.Base(rel) != c.Worker {
		return nil, fmt.Errorf("%w: %s is not the cgroup of worker %q", ErrNotOurs, rel, c.Worker)
	}
	g, err := h.Load(rel)
	if err != nil {
		return nil, err
	}
	// The parent must be hlaunch's too: a marker on a directory under someone else's parent was not put
	// there by a Create (Create refuses unmarked parents).
	ok, err := marked(filepath.Dir(g.primary))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: parent of %s", ErrNotOurs, g.primary)
	}
	if c.ID != 0 && g.id != c.ID {
		return nil, fmt.Errorf("%w: %s has cgroup id %d, the worker's was %d", ErrNotOurs, g.primary, g.id, c.ID)
	}
	return g, nil
}

// holdScope is Hold for a systemd scope.
func (h *Host) holdScope(rel string, c Claim) (*Group, error) {
	if h.Unified == "" {
		return nil, ErrNoUnified
	}
	if !strings.HasSuffix(c.Unit, ".scope") || checkName(c.Unit) != nil || path.Base(rel) != c.Unit {
		return nil, fmt.Errorf("%w: %s is not the cgroup of scope %q", ErrNotOurs, rel, c.Unit)
	}
	if c.ID == 0 || c.InvocationID == "" {
		return nil, fmt.Errorf("%w: scope %s: no cgroup id or InvocationID was recorded", ErrNotOurs, c.Unit)
	}
	dir := filepath.Join(h.Unified, rel)
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, dir)
	}
	id, err := inode(dir)
	if err != nil {
		return nil, err
	}
	if id != c.ID {
		return nil, fmt.Errorf("%w: %s has cgroup id %d, scope %s's was %d", ErrNotOurs, dir, id, c.Unit, c.ID)
	}
	inv, err := getXattr(dir, invocationTrusted, invocationUser)
	if err != nil {
		return nil, err
	}
	if len(inv) > 0 && !bytes.Equal(inv, []byte(c.InvocationID)) {
		return nil, fmt.Errorf("%w: %s belongs to invocation %s of %s, the worker's was %s", ErrNotOurs, dir, inv, c.Unit, c.InvocationID)
	}
	g := &Group{host: h, path: rel, v2: dir, v1: map[string]string{}, id: id, scope: true}
	g.finish()
	return g, nil
}

// MarkedAncestor returns the nearest cgroup at or above rel (a v2 path, relative to the root) that
// carries hlaunch's ownership marker, or "" when none does: a process whose cgroup has one runs inside a
// cgroup hlaunch made (a worker's, or a parent of workers). A path that leaves the root ("/.." parts, as
// /proc shows a cgroup outside the reader's cgroup namespace) has no such ancestor here. Legacy hosts
// (no v2 tree) answer "".
func (h *Host) MarkedAncestor(rel string) (string, error) {
	if h.Unified == "" || !strings.HasPrefix(rel, "/") || strings.Contains(rel, "/..") {
		return "", nil
	}
	for p := path.Clean(rel); p != "/"; p = path.Dir(p) {
		ok, err := marked(filepath.Join(h.Unified, p))
		if errors.Is(err, os.ErrNotExist) {
			continue // gone since /proc named it
		}
		if err != nil {
			return "", err
		}
		if ok {
			return p, nil
		}
	}
	return "", nil
}
