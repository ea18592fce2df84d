package sidecar

import (
	"os"
	"path/filepath"
	"testing"
	"time"

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
	if e := es.next(t); e.Type != EventExited || e.ID != "w-00000000000a" {
		t.Fatalf("while polling: %+v", e)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the watcher picks the directory up and lists once

	f.exit("w-00000000000b", 2, "", false) // no file written: only the slow poll would see it
	time.Sleep(100 * time.Millisecond)
	var h Health
	ts.do(t, "GET", "/v1/health", "", &h)
	if h.Running != 2 {
		t.Fatalf("the watcher listed without a wake-up: running %d, want 2 still", h.Running)
	}
	if err := os.WriteFile(filepath.Join(dir, "w-00000000000b.exit.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if e := es.next(t); e.Type != EventExited || e.ID != "w-00000000000b" || *e.ExitCode != 2 {
		t.Fatalf("after the exit file: %+v", e)
	}
}
