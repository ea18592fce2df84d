package sidecar

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// fakeBackend is the second backend implementation: an in-memory launcher for routing and event tests.
type fakeBackend struct {
	mu       sync.Mutex
	n        int
	recs     map[string]worker.Record
	order    []string
	signals  []string
	startErr error
	lastSpec worker.Spec
	listErr  error
	// listDelay makes List return a snapshot this old (a slow list racing spawns); startGate, when set,
	// holds Start after it wrote its record until the gate is closed.
	listDelay time.Duration
	startGate chan struct{}
	gets      map[string]int // Get calls per id
}

func newFake() *fakeBackend { return &fakeBackend{recs: map[string]worker.Record{}} }

// spec is the last spec StartWith was given (read under the lock: the server's goroutines write it).
func (f *fakeBackend) spec() worker.Spec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastSpec
}

func (f *fakeBackend) StartWith(ctx context.Context, spec worker.Spec, stdio worker.Stdio) (*worker.Receipt, error) {
	return f.StartWithID(ctx, spec, stdio, "")
}

func (f *fakeBackend) StartWithID(ctx context.Context, spec worker.Spec, _ worker.Stdio, id string) (*worker.Receipt, error) {
	f.mu.Lock()
	f.lastSpec = spec
	if f.startErr != nil {
		f.mu.Unlock()
		return nil, f.startErr
	}
	if spec.Profile == "" || len(spec.Argv) == 0 {
		f.mu.Unlock()
		return nil, fmt.Errorf("%w: profile and argv are required", worker.ErrInvalid)
	}
	f.n++
	if id == "" {
		id = fmt.Sprintf("w-%012x", f.n)
	}
	rc := worker.Receipt{ID: id, Token: "tok", PID: 1000 + f.n, Mode: "cgroup",
		Profile: spec.Profile, Argv: spec.Argv, Key: spec.Key}
	f.recs[rc.ID] = worker.Record{Receipt: rc, State: "running"}
	f.order = append(f.order, rc.ID)
	gate := f.startGate
	f.mu.Unlock()
	if gate != nil {
		<-gate // the record is on disk, the answer not yet given
	}
	return &rc, nil
}

func (f *fakeBackend) List(ctx context.Context) ([]worker.Record, error) {
	f.mu.Lock()
	if f.listErr != nil {
		f.mu.Unlock()
		return nil, f.listErr
	}
	out := make([]worker.Record, 0, len(f.order))
	for _, id := range f.order {
		out = append(out, f.recs[id])
	}
	delay := f.listDelay
	f.mu.Unlock()
	time.Sleep(delay)
	return out, nil
}

func (f *fakeBackend) IDs(ctx context.Context) ([]string, error) {
	f.mu.Lock()
	if f.listErr != nil {
		f.mu.Unlock()
		return nil, f.listErr
	}
	ids := append([]string(nil), f.order...)
	slices.Sort(ids) // in name order, as the launcher's
	delay := f.listDelay
	f.mu.Unlock()
	time.Sleep(delay)
	return ids, nil
}

func (f *fakeBackend) Get(ctx context.Context, ref string) (worker.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gets == nil {
		f.gets = map[string]int{}
	}
	f.gets[ref]++
	r, ok := f.recs[ref]
	if !ok {
		return worker.Record{}, fmt.Errorf("%w: %s", worker.ErrNotFound, ref)
	}
	return r, nil
}

func (f *fakeBackend) Signal(ctx context.Context, ref string, sig syscall.Signal, all bool) error {
	r, err := f.Get(ctx, ref)
	if err != nil {
		return err
	}
	if r.State != "running" {
		return fmt.Errorf("%w: %s", worker.ErrNotRunning, ref)
	}
	f.mu.Lock()
	f.signals = append(f.signals, fmt.Sprintf("%s %d %v", ref, sig, all))
	f.mu.Unlock()
	return nil
}

func (f *fakeBackend) Stop(ctx context.Context, ref string, grace time.Duration) (worker.Record, error) {
	if _, err := f.Get(ctx, ref); err != nil {
		return worker.Record{}, err
	}
	f.exit(ref, 143, "SIGTERM", false)
	return f.Get(ctx, ref)
}

func (f *fakeBackend) Wait(ctx context.Context, ref string) (worker.Record, error) {
	for {
		r, err := f.Get(ctx, ref)
		if err != nil || r.State != "running" {
			return r, err
		}
		select {
		case <-ctx.Done():
			return worker.Record{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// exit marks a worker ended, as the shim would record it.
func (f *fakeBackend) exit(id string, code int, sig string, oom bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.recs[id]
	r.State = "exited"
	if sig == "" {
		r.ExitCode = &code
	} else {
		r.Signal = sig
	}
	r.OOMKilled = oom
	f.recs[id] = r
}

// getsSince returns the Get calls per id since the last call, and resets the count.
func (f *fakeBackend) getsSince() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.gets
	f.gets = map[string]int{}
	return g
}

// remove deletes a record, as hlaunch gc does.
func (f *fakeBackend) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.recs, id)
	for i, o := range f.order {
		if o == id {
			f.order = append(f.order[:i], f.order[i+1:]...)
			break
		}
	}
}

// add puts a record in the fake state directory, as a previous sidecar or the CLI would have.
func (f *fakeBackend) add(r worker.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recs[r.ID] = r
	f.order = append(f.order, r.ID)
}

func (f *fakeBackend) MarkedCgroup(path string) (string, error) { return "", nil }

// getCount returns the Get calls for id so far.
func (f *fakeBackend) getCount(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets[id]
}

// ListPage is List paged by id, as the launcher pages it.
func (f *fakeBackend) ListPage(ctx context.Context, after string, limit int) ([]worker.Record, error) {
	all, err := f.List(ctx)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b worker.Record) int { return strings.Compare(a.ID, b.ID) })
	var out []worker.Record
	for _, r := range all {
		if r.ID > after && (limit <= 0 || len(out) < limit) {
			out = append(out, r)
		}
	}
	return out, nil
}
