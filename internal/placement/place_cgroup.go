package placement

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// cgroupPlacement is a raw cgroup hlaunch made for the worker (--scope cgroup, or auto without a manager).
type cgroupPlacement struct {
	g *cgroup.Group
}

func (l *Host) prepareCgroup(spec worker.Spec, id string) (*cgroupPlacement, error) {
	parent, err := l.CgroupParent(spec)
	if err != nil {
		return nil, err
	}
	var g *cgroup.Group
	applied, defaults := l.LimitsFor(spec)
	err = worker.FitDefaults(applied, defaults, func(lim cgroup.Limits) (err error) {
		// Create itself retries a parent removed under it (a gc beside us found it empty), with one bound.
		g, err = l.Cgroups.Create(parent, id, lim)
		return err
	})
	if err != nil {
		return nil, CgroupRefusal(err)
	}
	return &cgroupPlacement{g: g}, nil
}

func (*cgroupPlacement) Mode() worker.Mode { return worker.ModeCgroup }

func (p *cgroupPlacement) CloneFD() (*os.File, error) {
	f, err := p.g.OpenFD()
	if errors.Is(err, cgroup.ErrNoUnified) {
		return nil, nil
	}
	return f, err
}

// NeedsHold: v1 joins by PID, and so does v2 when the child was not cloned into the cgroup.
func (p *cgroupPlacement) NeedsHold(cloned bool) bool { return p.g.NeedsJoin() || !cloned }

func (p *cgroupPlacement) Place(_ context.Context, _ worker.Spec, _ string, pid int, cloned bool) error {
	if cloned {
		return p.g.Join(pid)
	}
	return p.g.JoinAll(pid)
}

func (p *cgroupPlacement) CgroupPath(int) string { return p.g.Path() }
func (p *cgroupPlacement) Describe() Placed      { return Placed{Limits: p.g.Limits()} }
func (p *cgroupPlacement) Group() *cgroup.Group  { return p.g }

func (p *cgroupPlacement) Release(ctx context.Context) {
	// The usual end: the leader was the only member and has been reaped. Only what it left behind needs
	// the kill (and its wait for "populated 0").
	if pop, err := p.g.Populated(); err != nil || pop {
		kctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = p.g.Kill(kctx)
		cancel()
	}
	_ = p.g.Delete()
}

// Close: the cgroup is the worker's now; the launcher holds nothing of it.
func (*cgroupPlacement) Close() {}
