package launcher

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

func (l *Launcher) prepareCgroup(spec worker.Spec, id string) (*cgroupPlacement, error) {
	parent, err := l.cgroupParent(spec)
	if err != nil {
		return nil, err
	}
	var g *cgroup.Group
	applied, defaults := l.limitsFor(spec)
	err = worker.FitDefaults(applied, defaults, func(lim cgroup.Limits) (err error) {
		// Create itself retries a parent removed under it (a gc beside us found it empty), with one bound.
		g, err = l.host.Create(parent, id, lim)
		return err
	})
	if err != nil {
		return nil, cgroupRefusal(err)
	}
	return &cgroupPlacement{g: g}, nil
}

func (*cgroupPlacement) mode() worker.Mode { return worker.ModeCgroup }

func (p *cgroupPlacement) cloneFD() (*os.File, error) {
	f, err := p.g.OpenFD()
	if errors.Is(err, cgroup.ErrNoUnified) {
		return nil, nil
	}
	return f, err
}

// needsHold: v1 joins by PID, and so does v2 when the child was not cloned into the cgroup.
func (p *cgroupPlacement) needsHold(cloned bool) bool { return p.g.NeedsJoin() || !cloned }

func (p *cgroupPlacement) place(_ context.Context, _ worker.Spec, _ string, pid int, cloned bool) error {
	if cloned {
		return p.g.Join(pid)
	}
	return p.g.JoinAll(pid)
}

func (p *cgroupPlacement) cgroupPath(int) string { return p.g.Path() }
func (p *cgroupPlacement) describe() placed      { return placed{limits: p.g.Limits()} }
func (p *cgroupPlacement) group() *cgroup.Group  { return p.g }

func (p *cgroupPlacement) release(ctx context.Context) {
	// The usual end: the leader was the only member and has been reaped. Only what it left behind needs
	// the kill (and its wait for "populated 0").
	if pop, err := p.g.Populated(); err != nil || pop {
		kctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = p.g.Kill(kctx)
		cancel()
	}
	_ = p.g.Delete()
}

// close: the cgroup is the worker's now; the launcher holds nothing of it.
func (*cgroupPlacement) close() {}
