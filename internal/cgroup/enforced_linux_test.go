package cgroup

import (
	"errors"
	"strings"
	"testing"
)

// Enforced reads limits back from wherever each controller governs a real process: a worker created
// with limits passes; a worker created without them (as a systemd user manager leaves a scope whose
// controllers are on v1 hierarchies it cannot manage) fails, naming each flag.
func TestEnforced(t *testing.T) {
	h := testHost(t)
	requireRoot(t)
	parent := testParent(t, h)
	lim := Limits{Memory: 64 << 20, Pids: 50, CPUs: 0.5, CPUWeight: 200}
	if h.Mode == Hybrid {
		lim.MemoryHigh = 48 << 20 // v1: memory.soft_limit_in_bytes
	}
	with, err := h.Create(parent, "w-with", lim)
	if err != nil {
		t.Fatalf("this host cannot apply %+v itself: %v", lim, err)
	}
	without, err := h.Create(parent, "w-without", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := selfCmd("held-cgroup"), selfCmd("held-cgroup")
	releaseA := startIn(t, with, a)
	releaseB := startIn(t, without, b)
	defer func() {
		releaseA()
		releaseB()
		a.Wait()
		b.Wait()
		_ = with.Delete()
		_ = without.Delete()
	}()

	if err := h.Enforced(a.Process.Pid, lim); err != nil {
		t.Fatalf("Enforced with the limits applied: %v", err)
	}
	if err := h.Enforced(b.Process.Pid, Limits{}); err != nil {
		t.Fatalf("Enforced with nothing asked: %v", err)
	}
	err = h.Enforced(b.Process.Pid, lim)
	if !errors.Is(err, ErrUnsupportedLimit) {
		t.Fatalf("Enforced without the limits = %v, want ErrUnsupportedLimit", err)
	}
	for _, flag := range []string{"--memory", "--pids", "--cpus", "--cpu-weight"} {
		if !strings.Contains(err.Error(), flag) {
			t.Errorf("error %q does not name %s", err, flag)
		}
	}

	// InEffect keeps what governs the process and zeroes the rest: all of lim for the worker with it, and
	// for the one without, nothing but a weight of 100 where the cpu controller governs it at all.
	if got, err := h.InEffect(a.Process.Pid, lim); err != nil || got != lim {
		t.Errorf("InEffect with the limits applied = %+v, %v; want %+v", got, err, lim)
	}
	defaults := Limits{Memory: 64 << 20, Pids: 2048, CPUWeight: 100}
	got, err := h.InEffect(b.Process.Pid, defaults)
	if err != nil || got.Memory != 0 || got.Pids != 0 {
		t.Errorf("InEffect without the limits = %+v, %v; want no memory or pids limit", got, err)
	}
}
