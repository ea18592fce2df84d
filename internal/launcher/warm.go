package launcher

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// ErrNotWarmable is returned by StartWarm for a spec that needs what the slot cannot give (see Warm); the
// slot is left unused, and the caller starts the spec with StartWith instead.
var ErrNotWarmable = errors.New("spec cannot start in a warm slot")

// Warm is a worker slot made ready before its spec is known, so that a spawn does not wait for what does
// not depend on it (ADR 0007): the worker's own cgroup or transient scope, made with the launcher's default
// limits, and its shim, already started in it (its Go start-up done) and waiting on its handshake for the
// worker's config. The shim starts the target only once that config arrives, so the target is still placed
// before its first instruction.
//
// A slot serves a spec with the launcher's default placement and default limits, no unit or slice of its own
// (those are fixed when the cgroup or scope is made; moving the shim into another cgroup at the spawn
// would take the kernel's cgroup migration lock, which costs more than the slot saves), and without
// inherited stdio (the shim's stdio is fixed when it starts). A slot is used once; Close one that was
// not used. If its owner dies, the shim reads EOF on its handshake and exits without starting anything: a
// scope is then collected by its manager, an empty cgroup stays until `hlaunch gc`.
type Warm struct {
	id    string
	scope worker.Scope // the Scope the slot was made for (the launcher's default, before resolution)
	mode  worker.Mode  // ModeCgroup or ModeScoped
	spec  worker.Spec  // the placement fields the slot was made with
	held  *heldShim    // the shim, started and placed, waiting for its config

	// limits are the limits the slot's cgroup or scope was made with (the launcher's defaults, before a
	// placement left out any it could not hold): a spec fits when its limits resolve to these.
	limits cgroup.Limits

	mu   sync.Mutex
	used bool
}

// NewWarm makes a slot for the launcher's default placement (Config.Defaults). Only a placement that
// resolves to a cgroup or a systemd scope has slots; anything else is ErrNotWarmable.
func (l *Launcher) NewWarm(ctx context.Context) (_ *Warm, retErr error) {
	spec := worker.Spec{}.WithDefaults(l.cfg.Defaults)
	spec.Detach = true
	if spec.Scope == worker.ScopeNone {
		return nil, fmt.Errorf("%w: scope none", ErrNotWarmable)
	}
	id := worker.NewWorkerID()
	p, err := l.Prepare(ctx, spec, id)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			p.Release(context.WithoutCancel(ctx))
		}
	}()
	w := &Warm{id: id, scope: spec.Scope, mode: p.Mode(), spec: spec}
	w.limits, _ = l.LimitsFor(spec)
	if w.mode != worker.ModeCgroup && w.mode != worker.ModeScoped {
		return nil, fmt.Errorf("%w: the default placement resolves to %s", ErrNotWarmable, w.mode)
	}
	h, err := l.holdShim(ctx, spec, id, p, nil)
	if err != nil {
		return nil, err
	}
	// A scope outlives the bus connection; nothing later needs it (an aborted slot's scope is empty, and
	// the manager collects it). A cgroup's close holds nothing.
	p.Close()
	w.held = h
	return w, nil
}

// Used reports whether the slot was used (or closed); an unused slot can still start a worker.
func (w *Warm) Used() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.used
}

// ID is the worker id the slot's worker will have.
func (w *Warm) ID() string { return w.id }

// fits reports whether spec (with the launcher's defaults applied) can start in w: limits are the
// launcher's default limits, and spec's must resolve to those the slot was made with.
func (w *Warm) fits(spec worker.Spec, limits cgroup.Limits) bool {
	if spec.Stdio == worker.StdioInherit || spec.Scope != w.scope {
		return false
	}
	if applied, _ := worker.EffectiveLimits(spec.Limits, limits); applied != w.limits {
		return false
	}
	if w.mode == worker.ModeScoped {
		return spec.Unit == "" && spec.Slice == w.spec.Slice && spec.UserManager == w.spec.UserManager
	}
	return spec.CgroupParent == w.spec.CgroupParent
}

// StartWarm is StartWith in the slot w: the worker gets the slot's id and shim. A spec that does not fit
// gives ErrNotWarmable and leaves w unused, as does a spec refused before anything is placed (a bad
// profile, a held key); any later failure uses the slot up.
func (l *Launcher) StartWarm(ctx context.Context, w *Warm, spec worker.Spec) (_ *worker.Receipt, retErr error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.used {
		return nil, errors.New("warm slot already used")
	}
	if !w.fits(spec.WithDefaults(l.cfg.Defaults), l.Limits) {
		return nil, ErrNotWarmable
	}
	d, err := l.detached(ctx, spec, worker.Stdio{}, w.id)
	if err != nil {
		return nil, err
	}
	defer d.unlock()
	w.used = true
	defer func() {
		if retErr != nil {
			w.held.p.Release(context.WithoutCancel(ctx)) // runShim ended the shim
		}
	}()
	return l.runShim(ctx, d, w.held)
}

// Close ends an unused slot: its shim exits without starting anything, and its cgroup is removed (a scope,
// emptied, is collected by its manager). It is a no-op on a used slot.
func (w *Warm) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.used {
		return
	}
	w.used = true
	w.held.child.Abort()
	w.held.p.Release(context.Background())
}
