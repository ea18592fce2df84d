package launcher_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Warm slots: a spec that fits starts in the slot (the slot's id, its cgroup under the parent); a spec
// with limits does not fit and leaves the slot unused; Close removes an unused slot's cgroup; a default
// placement of none has no slots.
func TestWarmSlots(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	ctx := context.Background()
	slot, err := w.l.NewWarm(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if left := w.workerCgroups(); len(left) != 1 || left[0] != slot.ID() {
		t.Fatalf("a slot's cgroup: %v, want [%s]", left, slot.ID())
	}
	limited := spec("exit 0")
	limited.Limits = cgroup.Limits{Pids: 10}
	if _, err := w.l.StartWarm(ctx, slot, limited); !errors.Is(err, launcher.ErrNotWarmable) || slot.Used() {
		t.Fatalf("a spec with limits in a slot: %v, used %v", err, slot.Used())
	}
	rc, err := w.l.StartWarm(ctx, slot, spec("exit 6"))
	if err != nil {
		t.Fatal(err)
	}
	w.remember(rc)
	if rc.ID != slot.ID() || !slot.Used() {
		t.Fatalf("warm worker %s in slot %s (used %v)", rc.ID, slot.ID(), slot.Used())
	}
	if rec := w.wait(rc.ID); rec.ExitCode == nil || *rec.ExitCode != 6 {
		t.Fatalf("warm worker's record %+v", rec)
	}
	if _, err := w.l.StartWarm(ctx, slot, spec("exit 0")); err == nil {
		t.Fatal("a used slot started a second worker")
	}

	unused, err := w.l.NewWarm(ctx)
	if err != nil {
		t.Fatal(err)
	}
	unused.Close()
	unused.Close() // a no-op the second time
	for _, c := range w.workerCgroups() {
		if c == unused.ID() {
			t.Errorf("a closed slot's cgroup %s is left", c)
		}
	}

	none := newWorld(t, worker.ScopeNone, nil)
	if _, err := none.l.NewWarm(ctx); !errors.Is(err, launcher.ErrNotWarmable) {
		t.Errorf("a slot for scope none: %v", err)
	}
}
