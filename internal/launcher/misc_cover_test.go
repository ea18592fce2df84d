package launcher_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// Doctor on this host: the cgroup layout it found, the v2 mount, and an auto choice with its reason.
func TestDoctorReportsHost(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	r, err := w.l.Doctor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.CgroupMode == "" || r.CgroupMode == "none" || r.Mounts["unified"] != w.v2() {
		t.Errorf("doctor: mode %q, mounts %v; want the host's v2 tree %s", r.CgroupMode, r.Mounts, w.v2())
	}
	if r.AutoChoice == "" || r.AutoReason == "" || !r.Pidfd {
		t.Errorf("doctor: auto %q (%q), pidfd %v", r.AutoChoice, r.AutoReason, r.Pidfd)
	}
	if _, err := os.Stat(filepath.Join(w.v2(), w.parent)); !os.IsNotExist(err) {
		t.Errorf("doctor created the cgroup parent: %v", err)
	}
}

// Environ composes what a worker of B would get, with provenance, starting nothing; DecodeSpec is strict.
func TestEnvironAndDecodeSpec(t *testing.T) {
	w := newWorld(t, worker.ScopeNone, nil)
	env, err := w.l.Environ(context.Background(), worker.Spec{Profile: "b", Argv: []string{"x"}, Env: map[string]string{"K": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	src := map[string]string{}
	for _, e := range env {
		src[e.Name] = e.Source
	}
	if !strings.HasPrefix(src["B_MARKER"], "profile:") || src["K"] != "flag" || src["A_MARKER"] != "" {
		t.Errorf("environ provenance: %v", src)
	}
	if _, err := w.l.Environ(context.Background(), worker.Spec{Profile: "../a", Argv: []string{"x"}}); !errors.Is(err, worker.ErrInvalid) {
		t.Errorf("a profile name with ..: %v", err)
	}
	if s, err := worker.DecodeSpec([]byte(`{"profile":"b","argv":["true"],"sandbox":true}`)); err != nil || s.Profile != "b" || !s.Sandbox {
		t.Errorf("decode: %+v, %v", s, err)
	}
	for _, bad := range []string{`{"Profile":"c"}`, `{"profile":"b","profile":"c"}`, `{"profile":"b"} x`, `{"nope":1}`} {
		if _, err := worker.DecodeSpec([]byte(bad)); !errors.Is(err, worker.ErrInvalid) || strings.Contains(err.Error(), "\n") {
			t.Errorf("decode %s: %v, want one line wrapping ErrInvalid", bad, err)
		}
	}
}

// New refuses what it cannot use, naming it: a relative state directory, a policy file that is not there.
func TestNewRefusesBadConfig(t *testing.T) {
	root := t.TempDir()
	for what, cfg := range map[string]launcher.Config{
		"--state-dir": {Root: root, StateDir: "relative/state"},
		"policy":      {Root: root, StateDir: t.TempDir(), PolicyFile: filepath.Join(root, "missing.json")},
	} {
		if _, err := launcher.New(cfg); !errors.Is(err, worker.ErrInvalid) || !strings.Contains(err.Error(), what) {
			t.Errorf("%s: %v", what, err)
		}
	}
	l, err := launcher.New(launcher.Config{Root: root, StateDir: filepath.Join(t.TempDir(), "s")})
	if err != nil {
		t.Fatal(err)
	}
	if l.Root() != root || !strings.HasSuffix(l.StateDir(), "/s") || l.WorkersDir() != l.StateDir()+"/workers" {
		t.Errorf("root %q, state %q, workers %q", l.Root(), l.StateDir(), l.WorkersDir())
	}
}

// A hermes row's PID and fingerprint (the legacy interface): verified, signalled only while it verifies,
// stopped; a wrong fingerprint is refused and nothing is sent.
func TestLegacyRow(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	ctx := context.Background()
	dir := t.TempDir()
	rc := w.start(spec(`trap 'echo hup >> ` + dir + `/hup' HUP; echo up > ` + dir + `/up; while :; do sleep 0.05; done`))
	waitFile(t, dir+"/up")
	rec, err := w.l.LegacyStatus(ctx, rc.PID, rc.Fingerprint)
	if err != nil || rec.State != "running" {
		t.Fatalf("legacy status: %+v, %v", rec, err)
	}
	wrong := rc.Fingerprint[:strings.LastIndexByte(rc.Fingerprint, '|')+1] + "1"
	if rec, err := w.l.LegacyStatus(ctx, rc.PID, wrong); err == nil && rec.State == "running" {
		t.Errorf("a wrong fingerprint verified: %+v", rec)
	}
	if err := w.l.LegacySignal(ctx, rc.PID, wrong, syscall.SIGHUP); err == nil {
		t.Error("a wrong fingerprint was authority to signal")
	}
	if err := w.l.LegacySignal(ctx, rc.PID, rc.Fingerprint, syscall.SIGHUP); err != nil {
		t.Fatalf("legacy signal: %v", err)
	}
	if got := waitFile(t, dir+"/hup"); got != "hup\n" {
		t.Errorf("the worker heard %q, want one HUP", got)
	}
	if rec, err := w.l.LegacyStop(ctx, rc.PID, rc.Fingerprint, time.Second); err != nil || rec.State == "running" {
		t.Errorf("legacy stop: %+v, %v", rec, err)
	}
	if rec := w.wait(rc.ID); rec.State != "exited" {
		t.Errorf("after legacy stop: %+v", rec)
	}
}

// Stdio "inherit": a detached worker writes to the descriptors the caller passed, and OnReceipt sees the
// receipt before the worker runs.
func TestDetachedInheritedStdio(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	var seen *worker.Receipt
	s := spec(`echo through-the-pipe`)
	s.Detach, s.Stdio = true, worker.StdioInherit
	rc, err := w.l.StartWith(context.Background(), s, worker.Stdio{Stdin: devnull, Stdout: wr, Stderr: wr, OnReceipt: func(rc *worker.Receipt) { seen = rc }})
	wr.Close()
	if err != nil {
		t.Fatal(err)
	}
	w.remember(rc)
	if seen == nil || seen.ID != rc.ID {
		t.Errorf("OnReceipt saw %+v", seen)
	}
	b := make([]byte, 64)
	_ = r.SetReadDeadline(time.Now().Add(60 * time.Second))
	n, _ := r.Read(b)
	if string(b[:n]) != "through-the-pipe\n" {
		t.Errorf("read %q from the inherited stdout", b[:n])
	}
	w.wait(rc.ID)
	// Inherit without descriptors is refused by name.
	if _, err := w.l.StartWith(context.Background(), s, worker.Stdio{}); !errors.Is(err, worker.ErrInvalid) || !strings.Contains(err.Error(), "stdio inherit") {
		t.Errorf("inherit without descriptors: %v", err)
	}
}

// --scope auto places the worker as doctor says it would (one decision): on this hybrid host without a
// system manager a cgroup, on a host with one a scope.
func TestAutoPlacementIsDoctorsChoice(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	r, err := w.l.Doctor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := spec("sleep 1000")
	s.Scope, s.CgroupParent = worker.ScopeAuto, w.parent
	rc := w.start(s)
	if rc.Mode != r.AutoChoice {
		t.Errorf("auto placed the worker %s, doctor says auto is %s (%s)", rc.Mode, r.AutoChoice, r.AutoReason)
	}
	if rec, err := w.l.Stop(context.Background(), rc.ID, time.Second); err != nil || rec.State != "exited" {
		t.Errorf("stop: %+v, %v", rec, err)
	}
}
