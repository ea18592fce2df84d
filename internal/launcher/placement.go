package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// scopeTimeout bounds the wait for StartTransientUnit's job: a manager that does not answer in this time is
// treated as absent.
const scopeTimeout = 10 * time.Second

// placement is where one worker lives, one type per mode: noPlacement and degraded (a plain child),
// cgroupPlacement (a raw cgroup hlaunch made), scopePlacement (a transient systemd scope). prepare decides
// which and creates what must exist before the child starts; place runs after the child (a held target,
// the sandbox's stub or a shim) exists and before it may run.
type placement interface {
	// mode is the receipt's mode: ModeNone, ModeDegraded, ModeCgroup or ModeScoped.
	mode() worker.Mode
	// cloneFD opens the fd a child is cloned into (clone3 CLONE_INTO_CGROUP), or returns nil when the
	// child is placed another way.
	cloneFD() (*os.File, error)
	// needsHold reports whether the child must wait on the handshake until place has run.
	needsHold(cloned bool) bool
	// place puts pid (cloned: already in the cgroup by clone3) where it belongs.
	place(ctx context.Context, spec worker.Spec, id string, pid int, cloned bool) error
	// cgroupPath is the worker's cgroup as the v2 tree names it (relative to its root), "" without one.
	cgroupPath(pid int) string
	// describe is what the receipt says about the placement (after place).
	describe() placed
	// group is the worker's own cgroup when hlaunch made it (cgroup mode), else nil.
	group() *cgroup.Group
	// release undoes prepare after a failed start, or tidies up after a foreground worker ended: a cgroup
	// is killed (its leftovers die with the leader) and removed; a scope is stopped.
	release(ctx context.Context)
	// close drops what the launcher holds without touching the worker (a detached launch).
	close()
}

// placed is what a receipt says about a placement.
type placed struct {
	limits       cgroup.Limits // limits as applied
	warning      string        // degraded: the one warning
	unit         string        // scoped: "<name>.scope"
	invocationID string        // scoped: the scope's InvocationID
}

// placer makes the placement of one mode for prepare. A launch makes them (l.made); doctor only checks
// that they could be made, creating nothing (doctor.go's dryPlacer), so both get the same decision.
type placer interface {
	// none is no placement.
	none() placement
	// cgroup makes the worker's raw cgroup.
	cgroup(spec worker.Spec, id string) (placement, error)
	// systemd connects to the manager that will own the worker's scope; async lets the connect overlap
	// the child's start (an explicit --scope systemd).
	systemd(ctx context.Context, spec worker.Spec, async bool) (placement, error)
}

// prepare decides the placement for spec and creates what must exist before the child starts.
func (l *Launcher) prepare(ctx context.Context, spec worker.Spec, id string) (placement, error) {
	p, _, err := decide(ctx, spec, id, made{l})
	return p, err
}

// decide is the one decision of which placement spec gets, with mk making (or only checking) each. It
// also says why, for doctor.
func decide(ctx context.Context, spec worker.Spec, id string, mk placer) (placement, string, error) {
	switch spec.Scope {
	case worker.ScopeNone:
		return mk.none(), "--scope none", nil
	case worker.ScopeCgroup:
		p, err := mk.cgroup(spec, id)
		return p, "--scope cgroup", err
	case worker.ScopeSystemd:
		p, err := mk.systemd(ctx, spec, true)
		return p, "--scope systemd", err
	}
	// auto: a scope when a manager answers; else a raw cgroup; else degraded, said once.
	p, sdErr := mk.systemd(ctx, spec, false)
	if sdErr == nil {
		return p, "a systemd manager answers", nil
	}
	if errors.Is(sdErr, worker.ErrInvalid) {
		return nil, "", sdErr
	}
	p, cgErr := mk.cgroup(spec, id)
	if cgErr == nil {
		return p, fmt.Sprintf("no systemd manager (%v); a raw cgroup can be made", sdErr), nil
	}
	// A bad parent or a limit this host cannot apply is the caller's error; a parent that is not ours or
	// not writable only means no raw cgroup is available here.
	if errors.Is(cgErr, cgroup.ErrBadParent) || errors.Is(cgErr, cgroup.ErrUnsupportedLimit) {
		return nil, "", cgErr
	}
	why := fmt.Sprintf("no restart-safe placement: systemd: %v; cgroup: %v", sdErr, cgErr)
	if spec.RequireScope {
		return nil, "", fmt.Errorf("%w: %s", worker.ErrDegraded, why)
	}
	if worker.HasLimit(spec.Limits) {
		return nil, "", fmt.Errorf("%w: limits cannot be applied: %s", worker.ErrDegraded, why)
	}
	return degraded{warning: "hlaunch: warning: running degraded (a plain process in its own session, not restart-safe): " + why}, why, nil
}

// made is the placer of a launch: it creates each placement.
type made struct{ l *Launcher }

func (made) none() placement { return noPlacement{} }

func (m made) cgroup(spec worker.Spec, id string) (placement, error) {
	p, err := m.l.prepareCgroup(spec, id)
	if err != nil {
		return nil, err // never a typed nil in the interface
	}
	return p, nil
}

func (m made) systemd(ctx context.Context, spec worker.Spec, async bool) (placement, error) {
	prepare := m.l.prepareSystemd
	if async {
		prepare = m.l.prepareSystemdAsync
	}
	p, err := prepare(ctx, spec)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// cgroupParent is the raw-cgroup parent spec's worker is made under: its own, else the default (where
// systemd owns the tree, only inside the caller's delegated subtree).
func (l *Launcher) cgroupParent(spec worker.Spec) (string, error) {
	if l.host == nil {
		return "", fmt.Errorf("no cgroup filesystem: %w", l.hostErr)
	}
	if spec.CgroupParent != "" {
		return spec.CgroupParent, nil
	}
	parent, err := l.host.DefaultParent()
	if err != nil {
		return "", fmt.Errorf("%w: %w: name a parent with --cgroup-parent (inside a unit with Delegate=yes), or use --scope systemd", worker.ErrInvalid, err)
	}
	return parent, nil
}

// cgroupRefusal wraps a raw cgroup's refusal that is the caller's (or the host's) answer in ErrInvalid.
func cgroupRefusal(err error) error {
	if errors.Is(err, cgroup.ErrBadParent) || errors.Is(err, cgroup.ErrNotOurs) || errors.Is(err, cgroup.ErrNotWritable) ||
		errors.Is(err, cgroup.ErrUnsupportedLimit) {
		return fmt.Errorf("%w: %w", worker.ErrInvalid, err)
	}
	return err
}
