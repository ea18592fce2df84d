package placement

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// ScopeTimeout bounds the wait for StartTransientUnit's job: a manager that does not answer in this time is
// treated as absent.
const ScopeTimeout = 10 * time.Second

// Host is what a launcher knows of where its workers can go: the host's cgroup filesystem, the systemd
// managers' kept connections and the default limits of a worker with a cgroup.
type Host struct {
	Cgroups    *cgroup.Host        // nil when this host has no usable cgroupfs
	CgroupsErr error               // why host is nil
	Buses      *Buses              // kept manager connections (Config.KeepBus); nil dials per launch
	Limits     cgroup.Limits       // the default limits of every worker with a cgroup (Config.Defaults.Limits)
	Getenv     func(string) string // the launcher's environment (Config.Environ), for the user bus's address
}

// LimitsFor is the limits a worker of spec gets from this launcher, and the part of them that are
// defaults.
func (l *Host) LimitsFor(spec worker.Spec) (applied, fromDefaults cgroup.Limits) {
	return worker.EffectiveLimits(spec.Limits, l.Limits)
}

// Placement is where one worker lives, one type per mode: NoPlacement and degraded (a plain child),
// cgroupPlacement (a raw cgroup hlaunch made), scopePlacement (a transient systemd scope). prepare decides
// which and creates what must exist before the child starts; place runs after the child (a held target,
// the sandbox's stub or a shim) exists and before it may run.
type Placement interface {
	// Mode is the receipt's mode: ModeNone, ModeDegraded, ModeCgroup or ModeScoped.
	Mode() worker.Mode
	// CloneFD opens the fd a child is cloned into (clone3 CLONE_INTO_CGROUP), or returns nil when the
	// child is placed another way.
	CloneFD() (*os.File, error)
	// NeedsHold reports whether the child must wait on the handshake until place has run.
	NeedsHold(cloned bool) bool
	// Place puts pid (cloned: already in the cgroup by clone3) where it belongs.
	Place(ctx context.Context, spec worker.Spec, id string, pid int, cloned bool) error
	// CgroupPath is the worker's cgroup as the v2 tree names it (relative to its root), "" without one.
	CgroupPath(pid int) string
	// Describe is what the receipt says about the placement (after place).
	Describe() Placed
	// Group is the worker's own cgroup when hlaunch made it (cgroup mode), else nil.
	Group() *cgroup.Group
	// Release undoes prepare after a failed start, or tidies up after a foreground worker ended: a cgroup
	// is killed (its leftovers die with the leader) and removed; a scope is stopped.
	Release(ctx context.Context)
	// Close drops what the launcher holds without touching the worker (a detached launch).
	Close()
}

// Placed is what a receipt says about a placement.
type Placed struct {
	Limits       cgroup.Limits // limits as applied
	Warning      string        // degraded: the one warning
	Unit         string        // scoped: "<name>.scope"
	InvocationID string        // scoped: the scope's InvocationID
}

// Placer makes the placement of one mode for prepare. A launch makes them (l.made); doctor only checks
// that they could be made, creating nothing (internal/doctor/doctor.go's dryPlacer), so both get the same decision.
type Placer interface {
	// None is no placement.
	None() Placement
	// Cgroup makes the worker's raw cgroup.
	Cgroup(spec worker.Spec, id string) (Placement, error)
	// Systemd connects to the manager that will own the worker's scope; async lets the connect overlap
	// the child's start (an explicit --scope systemd).
	Systemd(ctx context.Context, spec worker.Spec, async bool) (Placement, error)
}

// Prepare decides the placement for spec and creates what must exist before the child starts.
func (l *Host) Prepare(ctx context.Context, spec worker.Spec, id string) (Placement, error) {
	p, _, err := Decide(ctx, spec, id, made{l})
	return p, err
}

// Decide is the one decision of which placement spec gets, with mk making (or only checking) each. It
// also says why, for doctor.
func Decide(ctx context.Context, spec worker.Spec, id string, mk Placer) (Placement, string, error) {
	switch spec.Scope {
	case worker.ScopeNone:
		return mk.None(), "--scope none", nil
	case worker.ScopeCgroup:
		p, err := mk.Cgroup(spec, id)
		return p, "--scope cgroup", err
	case worker.ScopeSystemd:
		p, err := mk.Systemd(ctx, spec, true)
		return p, "--scope systemd", err
	}
	// auto: a scope when a manager answers; else a raw cgroup; else degraded, said once.
	p, sdErr := mk.Systemd(ctx, spec, false)
	if sdErr == nil {
		return p, "a systemd manager answers", nil
	}
	if errors.Is(sdErr, worker.ErrInvalid) {
		return nil, "", sdErr
	}
	p, cgErr := mk.Cgroup(spec, id)
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
type made struct{ l *Host }

func (made) None() Placement { return NoPlacement{} }

func (m made) Cgroup(spec worker.Spec, id string) (Placement, error) {
	p, err := m.l.prepareCgroup(spec, id)
	if err != nil {
		return nil, err // never a typed nil in the interface
	}
	return p, nil
}

func (m made) Systemd(ctx context.Context, spec worker.Spec, async bool) (Placement, error) {
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

// CgroupParent is the raw-cgroup parent spec's worker is made under: its own, else the default (where
// Systemd owns the tree, only inside the caller's delegated subtree).
func (l *Host) CgroupParent(spec worker.Spec) (string, error) {
	if l.Cgroups == nil {
		return "", fmt.Errorf("no cgroup filesystem: %w", l.CgroupsErr)
	}
	if spec.CgroupParent != "" {
		return spec.CgroupParent, nil
	}
	parent, err := l.Cgroups.DefaultParent()
	if err != nil {
		return "", fmt.Errorf("%w: %w: name a parent with --cgroup-parent (inside a unit with Delegate=yes), or use --scope systemd", worker.ErrInvalid, err)
	}
	return parent, nil
}

// CgroupRefusal wraps a raw cgroup's refusal that is the caller's (or the host's) answer in ErrInvalid.
func CgroupRefusal(err error) error {
	if errors.Is(err, cgroup.ErrBadParent) || errors.Is(err, cgroup.ErrNotOurs) || errors.Is(err, cgroup.ErrNotWritable) ||
		errors.Is(err, cgroup.ErrUnsupportedLimit) {
		return fmt.Errorf("%w: %w", worker.ErrInvalid, err)
	}
	return err
}
