package warmpool

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Warmer is what a pool needs from a launcher; *launcher.Launcher implements it.
type Warmer interface {
	NewWarm(ctx context.Context) (*launcher.Warm, error)
	StartWarm(ctx context.Context, w *launcher.Warm, spec worker.Spec) (*worker.Receipt, error)
}

// Pool keeps up to n warm slots (launcher.Warm) ready, so that a spawn finds its worker's cgroup or
// scope made and its shim started (the sidecar's Config.Warm). One goroutine (Run) refills it after every
// take.
type Pool struct {
	w     Warmer
	n     int
	slots chan *launcher.Warm
	need  chan struct{}
	logf  func(format string, args ...any)

	mu     sync.Mutex
	closed bool // drained: slots put back now are closed instead
}

// New makes a pool of n slots made by w; logf tells the operator of a slot that could not be made.
func New(w Warmer, n int, logf func(string, ...any)) *Pool {
	return &Pool{w: w, n: n, slots: make(chan *launcher.Warm, n), need: make(chan struct{}, 1), logf: logf}
}

// Run fills the pool until ctx ends, then closes every unused slot. Missing slots are made concurrently (a
// scope's D-Bus job takes milliseconds; one spawn after another would drain a pool filled one at a time).
// A failure to make a slot is logged once per distinct error and retried after a second; spawns meanwhile
// take the ordinary path. A default placement that has no slots (scope none, degraded) stops the filling.
func (p *Pool) Run(ctx context.Context) {
	defer p.drain()
	results := make(chan error, p.n)
	inflight, lastErr, stopped := 0, "", false
	// Slots still being made are waited for before drain, so that it closes them too (the sidecar's exit
	// must not leave a slot's cgroup behind).
	settle := func() {
		for ; inflight > 0; inflight-- {
			<-results
		}
	}
	for {
		for !stopped && len(p.slots)+inflight < p.n {
			inflight++
			go func() {
				w, err := p.w.NewWarm(ctx)
				if err == nil {
					p.put(w)
				}
				results <- err
			}()
		}
		select {
		case <-ctx.Done():
			settle()
			return
		case <-p.need:
		case err := <-results:
			inflight--
			switch {
			case err == nil:
				lastErr = ""
			case ctx.Err() != nil:
				settle()
				return
			default:
				if err.Error() != lastErr {
					p.logf("sidecar: preparing a warm slot: %v (spawns take the ordinary path meanwhile)", err)
					lastErr = err.Error()
				}
				if errors.Is(err, launcher.ErrNotWarmable) {
					stopped = true
					continue
				}
				select {
				case <-ctx.Done():
					settle()
					return
				case <-time.After(time.Second):
				}
			}
		}
	}
}

// drain closes the slots nobody took, and every slot put back from now on.
func (p *Pool) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for {
		select {
		case w := <-p.slots:
			w.Close()
		default:
			return
		}
	}
}

// Start starts spec in a warm slot. ok is false when it did not: the pool was empty, or spec does not fit
// a slot (the slot goes back); the caller then starts spec the ordinary way.
// before, when not nil, is called with the slot's worker id before the slot is used; its error fails the
// start and returns the slot.
func (p *Pool) Start(ctx context.Context, spec worker.Spec, before func(id string) error) (rc *worker.Receipt, ok bool, err error) {
	var w *launcher.Warm
	select {
	case w = <-p.slots:
	default:
		return nil, false, nil
	}
	if before != nil {
		if err := before(w.ID()); err != nil {
			p.put(w)
			return nil, true, err
		}
	}
	rc, err = p.w.StartWarm(ctx, w, spec)
	switch {
	case errors.Is(err, launcher.ErrNotWarmable):
		p.put(w)
		return nil, false, nil
	case err != nil && !w.Used():
		p.put(w) // refused before the slot was touched (a bad profile, a held key): still good
		return nil, true, err
	}
	p.refill()
	return rc, true, err
}

// put returns an unused slot, or closes it when the pool is full or shut.
func (p *Pool) put(w *launcher.Warm) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		w.Close()
		return
	}
	select {
	case p.slots <- w:
	default:
		w.Close()
	}
}

// refill wakes the filler.
func (p *Pool) refill() {
	select {
	case p.need <- struct{}{}:
	default:
	}
}

// Ready is how many slots are ready now.
func (p *Pool) Ready() int { return len(p.slots) }
