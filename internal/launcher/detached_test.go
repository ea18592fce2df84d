package launcher_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// A detached worker's life through the API: its receipt, its record while it runs (in List and IDs, by id
// and by token), a signal it handles, its final record, and a collection that removes what is left.
func TestDetachedWorkerLife(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	dir := t.TempDir()
	ready, got := filepath.Join(dir, "ready"), filepath.Join(dir, "got")
	rc := w.start(spec(`trap 'echo usr1 > ` + got + `; exit 5' USR1; env > ` + ready + `; while :; do sleep 0.05; done`))
	if rc.Mode != worker.ModeCgroup || rc.Profile != "b" || !strings.HasPrefix(rc.Cgroup, "/"+w.parent+"/w-") || rc.ShimPID == 0 {
		t.Fatalf("receipt %+v: want a cgroup worker of b under %s with a shim", rc, w.parent)
	}
	env := envOf(waitFile(t, ready))
	if env["B_MARKER"] != "b" || env["A_MARKER"] != "" || env["OPENAI_API_KEY"] != "" {
		t.Errorf("a detached worker's environ is not B's alone: %v", env)
	}
	ctx := context.Background()
	for _, ref := range []string{rc.ID, rc.Token} {
		rec, err := w.l.Status(ctx, ref)
		if err != nil || rec.State != "running" || rec.ID != rc.ID || rec.PID != rc.PID {
			t.Fatalf("status %s: %+v, %v; want running", ref[:8], rec, err)
		}
	}
	recs, err := w.l.List(ctx)
	if err != nil || len(recs) != 1 || recs[0].ID != rc.ID || recs[0].State != "running" {
		t.Fatalf("list: %+v, %v", recs, err)
	}
	if ids, err := w.l.IDs(ctx); err != nil || !slices.Equal(ids, []string{rc.ID}) {
		t.Fatalf("ids: %v, %v", ids, err)
	}
	if err := w.l.Signal(ctx, rc.ID, syscall.SIGUSR1, false); err != nil {
		t.Fatalf("signal: %v", err)
	}
	rec := w.wait(rc.ID)
	if rec.State != "exited" || rec.ExitCode == nil || *rec.ExitCode != 5 || rec.EndedAt == "" {
		t.Fatalf("final record %+v: want exited with 5", rec)
	}
	if b, _ := os.ReadFile(got); string(b) != "usr1\n" {
		t.Errorf("the worker did not hear USR1: %q", b)
	}
	// An ended worker: signals are refused with ErrNotRunning (exit 1), stop is idempotent.
	if err := w.l.Signal(ctx, rc.ID, syscall.SIGTERM, false); !errors.Is(err, worker.ErrNotRunning) || worker.ExitCode(err) != 1 {
		t.Errorf("signal to an ended worker: %v", err)
	}
	if rec, err := w.l.Stop(ctx, rc.ID, time.Second); err != nil || rec.State != "exited" {
		t.Errorf("stop of an ended worker: %+v, %v", rec, err)
	}
	// The collection: kept by Keep, removed beyond it, the parent removed once empty (the shim, which
	// leaves the worker's cgroup for the parent's exit cgroup to remove it, is the last to go).
	w.waitShim(rc)
	rep, err := w.l.GC(ctx, launcher.Retention{Keep: 1})
	if err != nil || len(rep.Removed) != 0 {
		t.Fatalf("gc keep 1: %+v, %v", rep, err)
	}
	rep, err = w.l.GC(ctx, launcher.Retention{Keep: 0})
	if err != nil || !slices.Equal(rep.Removed, []string{rc.ID}) {
		t.Fatalf("gc keep 0: %+v, %v; want %s removed", rep, err, rc.ID)
	}
	if _, err := w.l.Status(ctx, rc.ID); !errors.Is(err, worker.ErrNotFound) {
		t.Errorf("status after gc: %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Join(w.v2(), w.parent)); !os.IsNotExist(err) {
		t.Errorf("gc left the empty cgroup parent: %v", err)
	}
}

// Stop: SIGTERM to the whole worker, the whole cgroup killed after the grace when it ignores SIGTERM, and
// the record says which. A whole-worker signal (all) reaches every process of its cgroup.
func TestDetachedStop(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	ctx := context.Background()
	dir := t.TempDir()

	polite := w.start(spec(`sleep 1000 & echo $! > ` + dir + `/child; wait`))
	child, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, dir+"/child")))
	if err := w.l.Signal(ctx, polite.ID, syscall.SIGSTOP, true); err != nil {
		t.Fatalf("signal all: %v", err)
	}
	waitState(t, child, 'T')
	if err := w.l.Signal(ctx, polite.ID, syscall.SIGCONT, true); err != nil {
		t.Fatalf("signal all: %v", err)
	}
	rec, err := w.l.Stop(ctx, polite.ID, 10*time.Second)
	if err != nil || rec.State != "exited" {
		t.Fatalf("stop: %+v, %v", rec, err)
	}
	if syscall.Kill(child, 0) == nil && !zombie(child) {
		t.Errorf("the worker's child %d outlived the stop", child)
	}

	stubborn := w.start(spec(`trap '' TERM; echo up > ` + dir + `/up; while :; do sleep 0.05; done`))
	waitFile(t, dir+"/up")
	rec, err = w.l.Stop(ctx, stubborn.ID, 200*time.Millisecond)
	if err != nil || rec.State != "exited" || rec.Signal != "SIGKILL" {
		t.Fatalf("stop of a worker ignoring TERM: %+v, %v; want exited by SIGKILL", rec, err)
	}
	if left := w.workerCgroups(); len(left) != 0 {
		t.Errorf("cgroups left after stop: %v", left)
	}
	// The ledger has both executions, ended.
	led, err := w.l.Ledger(ctx, records.LedgerQuery{})
	if err != nil || len(led) != 2 {
		t.Fatalf("ledger: %d records, %v", len(led), err)
	}
	for _, r := range led {
		if r.State != "exited" || r.EndedAt == "" {
			t.Errorf("ledger record %s: state %s, ended %q", r.ID, r.State, r.EndedAt)
		}
	}
}

// --key: a second launch with a held key is refused (exit 73) and starts nothing; once the holder ended,
// the key is free. The ledger answers by key and by time.
func TestDetachedKeyAndLedger(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	ctx := context.Background()
	dir := t.TempDir()
	s := spec(`echo up > ` + dir + `/up; while :; do sleep 0.05; done`)
	s.Key = "cron-1"
	first := w.start(s)
	waitFile(t, dir+"/up")
	s.Detach = true
	if rc, err := w.l.Start(ctx, s); !errors.Is(err, worker.ErrKeyHeld) || worker.ExitCode(err) != 73 || !strings.Contains(err.Error(), first.ID) {
		if rc != nil {
			w.remember(rc)
		}
		t.Fatalf("second launch with a held key: %v; want ErrKeyHeld naming %s", err, first.ID)
	}
	if ids, _ := w.l.IDs(ctx); len(ids) != 1 {
		t.Errorf("a refused launch left a record: %v", ids)
	}
	if _, err := w.l.Stop(ctx, first.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	other := spec(`exit 4`)
	other.Key = "cron-2"
	second := w.start(other)
	w.wait(second.ID)
	third := w.start(s)
	if third.Key != "cron-1" {
		t.Fatalf("receipt key %q", third.Key)
	}
	for key, want := range map[string][]string{"cron-1": {first.ID, third.ID}, "cron-2": {second.ID}} {
		recs, err := w.l.Ledger(ctx, records.LedgerQuery{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range recs {
			ids = append(ids, r.ID)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("ledger for %s: %v, want %v (oldest first)", key, ids, want)
		}
	}
	if recs, _ := w.l.Ledger(ctx, records.LedgerQuery{Key: "cron-2"}); len(recs) == 1 && (recs[0].ExitCode == nil || *recs[0].ExitCode != 4) {
		t.Errorf("ledger record of cron-2: %+v, want exit 4", recs[0])
	}
	if recs, _ := w.l.Ledger(ctx, records.LedgerQuery{Since: time.Now().Add(time.Hour)}); len(recs) != 0 {
		t.Errorf("ledger since the future: %d records", len(recs))
	}
	// The running holder's ledger record verifies as running now.
	if recs, _ := w.l.Ledger(ctx, records.LedgerQuery{Key: "cron-1"}); len(recs) == 2 && recs[1].State != "running" {
		t.Errorf("the running worker's ledger record says %s", recs[1].State)
	}
	// Ledger retention: keep one record; the running execution's record is never pruned.
	rep, err := w.l.GC(ctx, launcher.Retention{Keep: 100, LedgerKeep: 1})
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := w.l.Ledger(ctx, records.LedgerQuery{})
	if rep.LedgerPruned != 2 || len(recs) != 1 || recs[0].ID != third.ID {
		t.Errorf("ledger after LedgerKeep 1: pruned %d, left %d; want the running one kept", rep.LedgerPruned, len(recs))
	}
}

// A detached worker's deadline: the shim stops it at --timeout and records it; the launcher's own
// per-worker log (WorkerLogs) receives its output and goes with its record.
func TestDetachedTimeoutAndWorkerLog(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, func(c *launcher.Config) { c.WorkerLogs = true })
	s := spec(`echo started; sleep 1000`)
	s.Timeout, s.Grace = "300ms", "200ms"
	rc := w.start(s)
	if rc.Log != filepath.Join(w.state, "logs", rc.ID+".log") {
		t.Fatalf("receipt log %q, want the launcher's own log of the worker", rc.Log)
	}
	rec := w.wait(rc.ID)
	if !rec.TimedOut || rec.State != "exited" {
		t.Fatalf("record %+v: want timed out", rec)
	}
	if b, _ := os.ReadFile(rc.Log); string(b) != "started\n" {
		t.Errorf("worker log %q", b)
	}
	w.waitShim(rc) // until then the worker's cgroup may still hold it, and gc leaves a cgroup with members
	rep, err := w.l.GC(context.Background(), launcher.Retention{})
	if err != nil || len(rep.Removed) != 1 {
		t.Fatalf("gc: %+v, %v", rep, err)
	}
	if _, err := os.Stat(rc.Log); !os.IsNotExist(err) {
		t.Errorf("the worker's own log outlived its record: %v", err)
	}
}

// Refs that name no worker: a well-formed id without a record (ErrNotFound), a ref that is neither an id
// nor a token (ErrInvalid), a token minted for a worker no record names (status answers, signals refused).
func TestWorkerRefs(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	ctx := context.Background()
	if _, err := w.l.Status(ctx, "w-0123456789ab"); !errors.Is(err, worker.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := w.l.Status(ctx, "bogus"); !errors.Is(err, worker.ErrInvalid) || worker.ExitCode(err) != 125 {
		t.Errorf("bogus ref: %v", err)
	}
	if err := w.l.Signal(ctx, "bogus", syscall.SIGTERM, false); !errors.Is(err, worker.ErrInvalid) {
		t.Errorf("signal to a bogus ref: %v", err)
	}
	// A worker's token, its record removed: the token alone verifies but gives no authority.
	dir := t.TempDir()
	rc := w.start(spec(`echo up > ` + dir + `/up; while :; do sleep 0.05; done`))
	waitFile(t, dir+"/up")
	if err := os.Remove(filepath.Join(w.state, "workers", rc.ID+".json")); err != nil {
		t.Fatal(err)
	}
	rec, err := w.l.Status(ctx, rc.Token)
	if err != nil || rec.State != "running" || !strings.Contains(rec.Reason, "no record") {
		t.Errorf("status by a token without record: %+v, %v", rec, err)
	}
	if err := w.l.Signal(ctx, rc.Token, syscall.SIGTERM, false); err == nil || errors.Is(err, worker.ErrNotRunning) {
		t.Errorf("a token without a record was authority to signal: %v", err)
	}
	if _, err := w.l.Status(ctx, rc.ID); !errors.Is(err, worker.ErrNotFound) {
		t.Errorf("status by the removed id: %v", err)
	}
	// The worker is still ours to end through its cgroup (the cleanup's Stop cannot find it).
	if err := os.WriteFile(filepath.Join(w.v2(), rc.Cgroup, "cgroup.kill"), []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
}

// waitState waits until pid's state (in /proc/<pid>/stat) is st.
func waitState(t *testing.T, pid int, st byte) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == st {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never reached state %c: %q", pid, st, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func zombie(pid int) bool {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
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
