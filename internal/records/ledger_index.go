package records

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// ledgerIndex is what a Store knows of its ledger between two scans of the directory, so that a
// collection costs what it removes rather than what the ledger keeps: the sidecar collects every
// --gc-interval for months, and a pass that stat'ed every file of a full ledger would cost with its size
// (ADR 0010). It holds the records in the order of their last write, oldest first, as the
// last scan found them, and how many the ledger holds: that scan's count, plus the detached launches this
// launcher made since (each shim writes one record), minus the records pruned since. A record another
// process adds (a CLI launch on the same state directory) is counted from the next scan, at most
// ledgerRescan later.
type ledgerIndex struct {
	mu      sync.Mutex
	scanned time.Time   // zero: never scanned (`hlaunch gc`, a fresh launcher: its one pass is exact)
	order   []ledgerEnt // oldest first; the front is consumed as records are pruned
	count   int
}

type ledgerEnt struct {
	id  string
	mod time.Time // the file's last write when scanned
}

// added counts one record a launch of this launcher is writing (its shim's).
func (x *ledgerIndex) added() {
	x.mu.Lock()
	x.count++
	x.mu.Unlock()
}

// scan reads the ledger directory anew: every record, by its last write. x.mu is held.
func (x *ledgerIndex) scan(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	x.order = x.order[:0]
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "w-") || !strings.HasSuffix(n, ".json") {
			continue
		}
		if info, err := e.Info(); err == nil {
			x.order = append(x.order, ledgerEnt{strings.TrimSuffix(n, ".json"), info.ModTime()})
		}
	}
	slices.SortFunc(x.order, func(a, b ledgerEnt) int { return a.mod.Compare(b.mod) })
	x.count = len(x.order)
	x.scanned = time.Now()
	return nil
}

// ledgerRescan is how long a ledger scan is trusted: a minute, or a sixteenth of the age limit when that
// is shorter (a record outlives the limit by at most that much).
func ledgerRescan(maxAge time.Duration) time.Duration {
	if maxAge > 0 {
		return min(time.Minute, maxAge/16)
	}
	return time.Minute
}

// prune removes, oldest first, the records beyond keep and those last written before old (zero: no age
// limit), never one whose execution has not ended, and returns how many went. An execution recorded with
// another boot id than boot (the current one; "": unknown) has ended, whether or not its end was
// recorded: the host rebooted under it. x.mu is held.
func (x *ledgerIndex) prune(dir string, keep int, old time.Time, boot string) int {
	d := &state.Dir{Path: dir}
	n, i := 0, 0
	for ; i < len(x.order); i++ {
		e := x.order[i]
		if (keep == 0 || x.count <= keep) && (old.IsZero() || e.mod.After(old)) {
			break
		}
		// Each one passed over leaves the order: the next scan puts it where it belongs now.
		var rec worker.Record
		if err := d.Read(e.id, &rec); errors.Is(err, state.ErrNotFound) {
			x.count-- // removed meanwhile (a concurrent gc)
			continue
		} else if err != nil || (rec.EndedAt == "" && (boot == "" || rec.BootID == "" || rec.BootID == boot)) {
			continue // unreadable now, or not ended: kept
		}
		// Written since the scan (the execution ended just now): it is the newest now. Pruned as the
		// scan's oldest, a worker that ended mid-pass would lose its ledger record.
		if info, err := os.Lstat(filepath.Join(dir, e.id+".json")); err != nil || !info.ModTime().Equal(e.mod) {
			continue
		}
		if d.Remove(e.id) == nil {
			n++
			x.count--
		}
	}
	x.order = x.order[i:]
	return n
}
