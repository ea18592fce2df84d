package launcher

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Wait's wake-ups are events: a change in the state directory, the end of a watched process; with neither,
// wait returns only when its ctx ends (a poll would return at its next tick).
func TestWakeupOnEvents(t *testing.T) {
	dir := t.TempDir()
	w := newWakeup(dir)
	defer w.close()
	if w.ep == nil {
		t.Fatal("no inotify on a temporary directory: Wait would poll")
	}
	// Nothing changed: only the end of ctx ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	if err := w.wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait with nothing changed: %v, want the ctx's deadline", err)
	}
	cancel()
	bg, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	// A record written (renamed into place, as state.Dir.Write does).
	tmp := filepath.Join(dir, ".w-x.tmp")
	if err := os.WriteFile(tmp, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "w-x.json")); err != nil {
		t.Fatal(err)
	}
	if err := w.wait(bg); err != nil {
		t.Fatalf("wait after a record was written: %v", err)
	}
	// The events were drained: nothing new, nothing to wake on.
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	if err := w.wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait after the events were read: %v, want the ctx's deadline", err)
	}
	cancel()
	// A watched process ends, no file changes.
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.watchPID(cmd.Process.Pid)
	if len(w.pidfds) != 1 {
		t.Fatalf("no pidfd of %d", cmd.Process.Pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err := w.wait(bg); err != nil {
		t.Fatalf("wait after the watched process ended: %v", err)
	}
	if len(w.pidfds) != 0 {
		t.Errorf("the ended process's pidfd is still watched")
	}
}
