package launcher

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/shim"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// stop's completion of the exit record (recordStopped: it thinks the shim died with the tree) and the
// shim's own final record race when the shim outlives the SIGTERM: whichever writes second must merge,
// not overwrite. The shim's facts (the leader's exit code, the log's figures) are never lost, and a stop
// that came first still says stopped. Were each to write its own record whole, a stop that read before
// the shim's write and wrote after it would drop the exit code.
func TestExitRecordStopAndShimRace(t *testing.T) {
	for round := 0; round < 200; round++ {
		dir := t.TempDir()
		workers, ledger := filepath.Join(dir, "workers"), filepath.Join(dir, "ledger")
		for _, d := range []string{workers, ledger} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		l := &Launcher{Store: records.Store{StatePath: dir, LedgerPath: ledger}}
		const id = "w-0123456789ab"
		sc := &shim.WorkerConfig{ID: id, Workers: workers, Ledger: ledger}
		code := 7
		rec := records.ExitRecord{ExitCode: &code, EndedAt: time.Now().UTC().Format(time.RFC3339Nano), LogBytes: 42}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); l.recordStopped(worker.Receipt{ID: id}, false) }()
		go func() { defer wg.Done(); (&shim.Life{}).Finish(sc, nil, rec) }()
		wg.Wait()
		var got records.ExitRecord
		if err := (&state.Dir{Path: workers}).Read(id+".exit", &got); err != nil {
			t.Fatal(err)
		}
		if got.ExitCode == nil || *got.ExitCode != code || got.LogBytes != 42 || got.EndedAt == "" {
			t.Fatalf("round %d: the shim's record was lost to stop's: %+v", round, got)
		}
	}
}
