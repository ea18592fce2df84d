package launcher

import (
	"errors"
	"fmt"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// claimOf is what a worker's record says about its cgroup: the identity's path, cgroup id, unit and
// InvocationID, and the worker id that names a raw cgroup hlaunch made.
func claimOf(id string, ident fingerprint.Identity) cgroup.Claim {
	c := cgroup.Claim{Path: ident.Cgroup, ID: ident.CgroupID, Unit: ident.Unit, InvocationID: ident.InvocationID}
	if c.Unit == "" {
		c.Worker = id
	}
	return c
}

// workerGroup is the worker's cgroup, held on what its record says (cgroup.Host.Hold decides), or nil
// with the reason it is not the worker's. Every whole-tree path of a later operation (stats, delete, gc)
// goes through here; the shim holds its worker's cgroup on its own config (shimGroup).
func (l *Launcher) workerGroup(rc worker.Receipt, ident fingerprint.Identity) (*cgroup.Group, error) {
	if l.Cgroups == nil {
		return nil, fmt.Errorf("no cgroup filesystem: %w", l.CgroupsErr)
	}
	if ident.Cgroup == "" {
		return nil, fmt.Errorf("%w: worker %s has no cgroup", cgroup.ErrNotFound, rc.ID)
	}
	return l.Cgroups.Hold(claimOf(rc.ID, ident))
}

// owns is the signal authority beyond the identity: a worker is signalled only when hlaunch recorded it
// (a record in the state directory whose token is this identity: a token alone names nothing, anyone can
// mint one) and its cgroup is the one the record
// names (workerGroup: the ownership marks and name of a raw cgroup, the id, unit and InvocationID of a
// scope). A token minted for a parent of workers or another tool's cgroup verifies as "running" against
// the live system; this is what refuses it.
func (l *Launcher) owns(rc worker.Receipt, ident fingerprint.Identity) error {
	if rc.ID == "" {
		return fmt.Errorf("%w: no worker is recorded with this token in state dir %s", worker.ErrRefused, l.StatePath)
	}
	if rc.Cgroup != ident.Cgroup {
		return fmt.Errorf("%w: record %s names cgroup %q, its token %q", worker.ErrRefused, rc.ID, rc.Cgroup, ident.Cgroup)
	}
	if ident.Cgroup == "" {
		return nil // placement none or degraded: the leader's pidfd is the whole authority
	}
	if _, err := l.workerGroup(rc, ident); err != nil {
		if errors.Is(err, cgroup.ErrNotFound) {
			return fmt.Errorf("%w: %w", worker.ErrNotRunning, err)
		}
		return fmt.Errorf("%w: cgroup %s is not worker %s's: %w", worker.ErrRefused, ident.Cgroup, rc.ID, err)
	}
	return nil
}

// joinReason appends a clause to a verdict's one-line reason.
func joinReason(reason, more string) string {
	if reason == "" {
		return more
	}
	return reason + "; " + more
}

// MarkedCgroup returns the cgroup hlaunch made (a worker's or a parent of workers) that contains the v2
// cgroup path (as /proc/<pid>/cgroup names it in this process's cgroup namespace), or "" when there is
// none. The sidecar refuses peers that run inside one.
func (l *Launcher) MarkedCgroup(path string) (string, error) {
	if l.Cgroups == nil {
		return "", nil
	}
	return l.Cgroups.MarkedAncestor(path)
}
