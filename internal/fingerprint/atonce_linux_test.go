package fingerprint

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Two whole-tree signals of one worker at once (two handles, as two processes would hold; one lock file),
// against a leader that forks a sleep every few milliseconds, many rounds: each holds the worker's lock
// around its freeze, signal, thaw, so neither thaws the other's freeze (which would leave the second waiting
// for a "frozen 1" that never comes) and neither misses a member; both succeed, every process ends from the
// SIGTERMs alone, and the cgroup is not left frozen.
func TestKernelSignalAllAtOnceUnderLock(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "w.lock")
	for round := 0; round < 10; round++ {
		tr := newTree(t)
		w := tr.mkdir("w")
		p := tr.start(w, "sh", "-c", "while :; do sleep 300 & sleep 0.005; done")
		tr.waitProcs(w, 6)
		src := tr.src()
		id := mustCapture(t, src, p.pid, w)
		var hs [2]*Handle
		for i := range hs {
			h, _, err := Authorize(src, id)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			h.SetLock(lock)
			hs[i] = h
		}
		ctx := ctxT(t, 20*time.Second)
		var wg sync.WaitGroup
		errs := make([]error, len(hs))
		for i, h := range hs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = h.SignalAll(ctx, syscall.SIGTERM) }()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: SignalAll #%d: %v", round, i, err)
			}
		}
		if b, err := os.ReadFile(tr.path(w) + "/cgroup.freeze"); err != nil || strings.TrimSpace(string(b)) != "0" {
			t.Fatalf("round %d: cgroup left frozen: %q, %v", round, b, err)
		}
		// SIGTERM ends a sleep and the shell: only a member both passes missed would keep it populated.
		if err := hs[0].WaitEmpty(ctxT(t, 10*time.Second)); err != nil {
			left, _ := hs[0].Members()
			t.Fatalf("round %d: members left after the SIGTERMs: %v (%v)", round, left, err)
		}
		p.requireKilledBy(t, syscall.SIGTERM)
		tr.remove()
	}
}
