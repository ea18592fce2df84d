package launcher

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// BenchmarkGCPassLedger is one collection pass of the sidecar's after a second of spawns at a gateway's
// rate (50 launches' ledger records written, then GC with the soak's retention: 200 ended workers kept, a ledger
// bound of 5,000), over a ledger below its bound (a fresh sidecar: 2,000 records, nothing to prune) and at it
// (a soaked one: 50 records pruned a pass).
// integration.TestSoak compares the two sidecars: a pass must not cost with the size of what is kept.
// The state directory is on a tmpfs where there is one, as /run/hlaunch is.
func BenchmarkGCPassLedger(b *testing.B) {
	for _, tc := range []struct {
		name string
		n    int
		keep int
	}{{"below-bound", 2000, 1 << 30}, {"at-bound", 5000, 5000}} {
		b.Run(tc.name, func(b *testing.B) {
			l := tmpfsLauncher(b)
			next := 0
			write := func() {
				now := time.Now().UTC().Format(time.RFC3339Nano)
				rec := worker.Record{Receipt: worker.Receipt{ID: fmt.Sprintf("w-%012x", next), StartedAt: now},
					State: fingerprint.Exited, EndedAt: now}
				next++
				if err := records.WriteLedger(l.LedgerPath, rec); err != nil {
					b.Fatal(err)
				}
				l.LedgerAdded() // as runShim counts its shim's record
			}
			for next < tc.n {
				write()
			}
			r := Retention{Keep: 200, LedgerKeep: tc.keep, KeepParent: true}
			if tc.n >= r.LedgerKeep { // at the bound as a soaked sidecar is: pruned once, then filling again
				if _, err := l.GC(context.Background(), r); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for k := 0; k < 50; k++ {
					write()
					if tc.keep > tc.n { // below the bound: at its size, whatever b.N (as if another gc took the oldest)
						_ = os.Remove(fmt.Sprintf("%s/w-%012x.json", l.LedgerPath, next-1-tc.n))
					}
				}
				b.StartTimer()
				if _, err := l.GC(context.Background(), r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
