package launcher

import (
	"fmt"

	"github.com/hlaunch/hlaunch/cgroup"
	"github.com/hlaunch/hlaunch/fingerprint"
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
func (l *Launcher) workerGroup(rc Receipt, ident fingerprint.Identity) (*cgroup.Group, error) {
	if l.host == nil {
		return nil, fmt.Errorf("no cgroup filesystem: %w", l.hostErr)
	}
	if ident.Cgroup == "" {
		return nil, fmt.Errorf("%w: worker %s has no cgroup", cgroup.ErrNotFound, rc.ID)
	}
	return l.host.Hold(claimOf(rc.ID, ident))
}
