package records

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// LedgerIndex is what a Launcher knows of its ledger between two scans of the directory, so that a
// collection costs what it removes rather than what the ledger keeps: the sidecar collects every
// --gc-interval for months, and a pass over a full ledger (10,000 files stat'ed) cost as much as ten
// launches (issue 16's soak). It holds the records in the order of their last write, oldest first, as the
// last scan found them, and how many the ledger holds: that scan's count, plus the detached launches this
// launcher made since (each shim writes one record), minus the records pruned since. A record another
// process adds (a CLI launch on the same state directory) is counted from the next scan, at most
// LedgerRescan later.
type LedgerIndex struct {
	Mu      sync.Mutex
	Scanned time.Time   // zero: never scanned (`hlaunch gc`, a fresh launcher: its one pass is exact)
	Order   []ledgerEnt // oldest first; the front is consumed as records are pruned
	Count   int
}

type ledgerEnt struct {
	id  string
	mod time.Time // the file's last write when scanned
}

// Added counts one record a launch of this launcher is writing (its shim's).
func (x *LedgerIndex) Added() {
	x.Mu.Lock()
	x.Count++
	x.Mu.Unlock()
}

// Scan reads the ledger directory anew: every record, by its last write. x.mu is held.
func (x *LedgerIndex) Scan(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	x.Order = x.Order[:0]
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "w-") || !strings.HasSuffix(n, ".json") {
			continue
		}
		if info, err := e.Info(); err == nil {
			x.Order = append(x.Order, ledgerEnt{strings.TrimSuffix(n, ".json"), info.ModTime()})
		}
	}
	sort.Slice(x.Order, func(i, j int) bool { return x.Order[i].mod.Before(x.Order[j].mod) })
	x.Count = len(x.Order)
	x.Scanned = time.Now()
	return nil
}

// LedgerRescan is how long a ledger scan is trusted: a minute, or a sixteenth of the age limit when that
// is shorter (a record outlives the limit by at most that much).
func LedgerRescan(maxAge time.Duration) time.Duration {
	if maxAge > 0 {
		return min(time.Minute, maxAge/16)
	}
	return time.Minute
}

// Prune removes, oldest first, the records beyond keep and those last written before old (zero: no age
// limit), never one whose execution has not ended, and returns how many went. An execution recorded with
// another boot id than boot (the current one; "": unknown) has ended, whether or not its end was
// recorded: the host rebooted under it. x.mu is held.
func (x *LedgerIndex) Prune(dir string, keep int, old time.Time, boot string) int {
	d := &state.Dir{Path: dir}
	n, i := 0, 0
	for ; i < len(x.Order); i++ {
		e := x.Order[i]
		if (keep == 0 || x.Count <= keep) && (old.IsZero() || e.mod.After(old)) {
			break
		}
		// Each one passed over leaves the order: the next scan puts it where it belongs now.
		var rec worker.Record
		if err := d.Read(e.id, &rec); errors.Is(err, state.ErrNotFound) {
			x.Count-- // removed meanwhile (a concurrent gc)
			continue
		} else if err != nil || (rec.EndedAt == "" && (boot == "" || rec.BootID == "" || rec.BootID == boot)) {
			continue // unreadable now, or not ended: kept
		}
		// Written since the scan (the execution ended just now): it is the newest now. Without this a
		// worker that ended mid-pass lost its ledger record (the soak, issue 16).
		if info, err := os.Lstat(filepath.Join(dir, e.id+".json")); err != nil || !info.ModTime().Equal(e.mod) {
			continue
		}
		if d.Remove(e.id) == nil {
			n++
			x.Count--
		}
	}
	x.Order = x.Order[i:]
	return n
}
