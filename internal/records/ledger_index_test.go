package records

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// The sidecar's collection (PruneLedger, as Launcher.GC calls it) prunes the ledger from what its last scan found and the launches it made since,
// without reading the directory again; a record it did not count (another process's launch) is found by the
// next scan, at most ledgerRescan later; a record rewritten since the scan (its execution ended just now)
// and one of an execution that has not ended are kept.
func TestLedgerPruneIncremental(t *testing.T) {
	l := &Store{StatePath: t.TempDir(), LedgerPath: t.TempDir(), Src: fingerprint.Sources{}.KeepBootID()}
	base := time.Now().Add(-time.Hour)
	n := 0
	write := func(ended bool) string {
		t.Helper()
		id := fmt.Sprintf("w-%012x", n)
		rec := worker.Record{Receipt: worker.Receipt{ID: id}, State: fingerprint.Running}
		if ended {
			rec.State, rec.EndedAt = fingerprint.Exited, base.UTC().Format(time.RFC3339Nano)
		}
		if err := WriteLedger(l.LedgerPath, rec); err != nil {
			t.Fatal(err)
		}
		// One second apart, in the order written: the ledger's order is the files' last write.
		at := base.Add(time.Duration(n) * time.Second)
		if err := os.Chtimes(filepath.Join(l.LedgerPath, id+".json"), at, at); err != nil {
			t.Fatal(err)
		}
		n++
		return id
	}
	left := func() map[string]bool {
		t.Helper()
		ents, err := os.ReadDir(l.LedgerPath)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, e := range ents {
			m[e.Name()[:len(e.Name())-len(".json")]] = true
		}
		return m
	}
	gc := func(keep int) int { return l.PruneLedger(keep, 0) }
	running := write(false) // the oldest, never pruned while it runs
	var ids []string
	for range 9 {
		ids = append(ids, write(true))
	}
	// The first pass scans: the oldest ended ones go until 5 are left, the running one among them.
	if got := gc(5); got != 5 || !left()[running] || !left()[ids[8]] || left()[ids[4]] {
		t.Fatalf("first pass: pruned %d, left %v; want 5 pruned, the running one and the 4 newest left", got, left())
	}
	scanned := l.ledgerIdx.scanned
	// Three launches of this launcher: the next pass prunes three, from the scan, without another.
	for range 3 {
		write(true)
		l.LedgerAdded()
	}
	if got := gc(5); got != 3 || l.ledgerIdx.scanned != scanned || !left()[running] || left()[ids[7]] || !left()[ids[8]] {
		t.Fatalf("second pass: pruned %d (rescanned: %v), left %v; want 3 pruned from the scan", got, l.ledgerIdx.scanned != scanned, left())
	}
	// ids[8] ends again just now (rewritten after the scan): passed over, not pruned for being the oldest
	// in the scan; with the scan used up and the ledger still over, a new scan finds the oldest ended one.
	newer := write(true)
	l.LedgerAdded()
	later := time.Now()
	if err := os.Chtimes(filepath.Join(l.LedgerPath, ids[8]+".json"), later, later); err != nil {
		t.Fatal(err)
	}
	oldest := fmt.Sprintf("w-%012x", 10) // the first of the second pass's three
	if got := gc(5); got != 1 || !left()[ids[8]] || left()[oldest] || !left()[newer] || !left()[running] {
		t.Fatalf("third pass: pruned %d, left %v; want %s pruned, the record rewritten since the scan kept", got, left(), oldest)
	}
	// Another process's launch is not counted: no pass reads the directory for it until the scan is older
	// than ledgerRescan; then it is over the bound, and the oldest ended record goes.
	write(true)
	scanned = l.ledgerIdx.scanned
	if got := gc(5); got != 0 || len(left()) != 6 || l.ledgerIdx.scanned != scanned {
		t.Fatalf("uncounted record: pruned %d, left %v (rescanned: %v); want none pruned before the rescan", got, left(), l.ledgerIdx.scanned != scanned)
	}
	l.ledgerIdx.scanned = l.ledgerIdx.scanned.Add(-ledgerRescan(0))
	if got := gc(5); got != 1 || !left()[running] || !left()[ids[8]] || len(left()) != 5 {
		t.Fatalf("after a rescan: pruned %d, left %v; want 5 left, the running one and the rewritten one among them", got, left())
	}
}
