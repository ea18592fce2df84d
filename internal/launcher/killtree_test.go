package launcher

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// A foreground worker's whole-cgroup kill waits a bounded time for the cgroup to empty: a kill that never
// sees it empty (a member in uninterruptible sleep; here a fake that waits for its context) returns at the
// bound and says so in one line on stderr, naming the cgroup, rather than waiting
// on context.Background() for ever.
func TestKillTreeBounded(t *testing.T) {
	var stderr bytes.Buffer
	l := &Launcher{cfg: Config{Stderr: &stderr}}
	hang := func(ctx context.Context) error {
		<-ctx.Done() // never empty: only the bound ends the wait
		return ctx.Err()
	}
	const bound = 100 * time.Millisecond
	done := make(chan struct{})
	began := time.Now()
	go func() { l.killTree(hang, "/hlaunch/w-0123456789ab", bound); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("killTree did not return at its bound")
	}
	if took := time.Since(began); took < bound {
		t.Fatalf("killTree returned after %v, before its bound %v", took, bound)
	}
	msg := stderr.String()
	if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "/hlaunch/w-0123456789ab") || !strings.Contains(msg, "did not empty within 100ms") {
		t.Fatalf("stderr = %q, want one line naming the cgroup and the bound", msg)
	}
	// A kill that empties the cgroup says nothing.
	stderr.Reset()
	l.killTree(func(context.Context) error { return nil }, "/hlaunch/w-0123456789ab", bound)
	if stderr.Len() != 0 {
		t.Fatalf("stderr after a kill that emptied the cgroup = %q", stderr.String())
	}
}
