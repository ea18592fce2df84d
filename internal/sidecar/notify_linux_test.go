package sidecar

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/sidecar/events"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// TestWatchDirWakesWatcher: with the records directory watched, a change that writes no file is seen only
// at the slow poll, and a file written there wakes the watcher at once. Before the directory exists the
// watcher polls, and it starts watching once the directory appears.
func TestWatchDirWakesWatcher(t *testing.T) {
	dir := filepath.Join(shortTempDir(t), "workers")
	f := newFake()
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-00000000000a"}, State: "running"})
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-00000000000b"}, State: "running"})
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-00000000000c"}, State: "running"})
	ts := startTest(t, f, Config{WatchDir: dir, PollInterval: 5 * time.Millisecond, SlowPoll: time.Hour})
	es := ts.events(t, "?since=3")

	// No directory yet: plain polling notices the exit.
	f.exit("w-00000000000a", 1, "", false)
	if e := es.next(t); e.Type != events.Exited || e.ID != "w-00000000000a" {
		t.Fatalf("while polling: %+v", e)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// The watcher picks the directory up and lists once; its first idle tick shows that it watches it.
	ts.awaitIdleTicks(t, 1)

	f.exit("w-00000000000b", 2, "", false) // no file written: only the slow poll would see it
	ts.awaitIdleTicks(t, 3)                // three ticks that chose not to list
	var h Health
	ts.do(t, "GET", "/v1/health", "", &h)
	if h.Running != 2 {
		t.Fatalf("the watcher listed without a wake-up: running %d, want 2 still", h.Running)
	}
	if err := os.WriteFile(filepath.Join(dir, "w-00000000000b.exit.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if e := es.next(t); e.Type != events.Exited || e.ID != "w-00000000000b" || *e.ExitCode != 2 {
		t.Fatalf("after the exit file: %+v", e)
	}
}

// awaitIdleTicks returns once the watcher has taken n more ticks without listing (Server.idleTicks), and
// fails the test when it does not within 30s: a watcher that lists at every tick never takes one.
func (ts *testServer) awaitIdleTicks(t *testing.T, n uint64) {
	t.Helper()
	idle := func() uint64 { ts.mu.Lock(); defer ts.mu.Unlock(); return ts.idleTicks }
	want := idle() + n
	for deadline := time.Now().Add(30 * time.Second); idle() < want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the watcher took %d of %d idle ticks within 30s", n-(want-idle()), n)
		}
	}
}
