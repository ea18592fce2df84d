package launcher_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/testutil"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// A launch whose context ends while it waits for its shim's answer either fails or returns a receipt whose
// shim is alive: the guard that kills a shim that does not answer must not kill one that has answered and
// then let the launch succeed (the worker would run with its shim killed by its own launcher). A bounded
// adversary loop: contexts that end at random times around the answer.
func TestStartCancelledAroundTheAnswer(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	// How long a start takes here, to spread the cancellations around it.
	t0 := time.Now()
	w.start(spec("sleep 30"))
	took := time.Since(t0)
	ok, failed := 0, 0
	for i := 0; i < 200; i++ {
		// Within 30% of the time a start takes, where its answer comes.
		at := time.Duration(float64(took) * (0.7 + 0.6*rand.Float64()))
		ctx, cancel := context.WithTimeout(context.Background(), at)
		s := spec("sleep 30")
		s.Detach = true
		rc, err := w.l.Start(ctx, s)
		cancel()
		if err != nil {
			failed++
			continue
		}
		w.remember(rc)
		ok++
		// Alive and not a zombie: the launcher reaps its shims only once they end.
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", rc.ShimPID)); err != nil || strings.Contains(string(st), ") Z ") {
			t.Fatalf("start %d succeeded (receipt %s) but its shim %d has ended: %q, %v", i, rc.ID, rc.ShimPID, st, err)
		}
		if r, err := w.l.Get(context.Background(), rc.ID); err != nil || r.ShimLost {
			t.Fatalf("start %d succeeded but its record says %+v, %v", i, r, err)
		}
		testutil.KillCgroup(filepath.Join(w.v2(), rc.Cgroup)) // not 200 sleeps at once
	}
	t.Logf("%d started, %d failed (a start takes about %v here)", ok, failed, took)
}
