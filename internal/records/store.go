package records

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
)

// Store is a launcher's records: its state directory (one record per detached worker, the token index,
// the quarantine) and its ledger directory (one execution record per worker, kept past the worker).
type Store struct {
	StatePath  string // state directory
	LedgerPath string // ledger directory
	Src        fingerprint.Sources

	ledgerIdx ledgerIndex   // the ledger as the last collection left it (PruneLedger)
	tokenIdx  tokenIndexed  // the records a token scan has indexed (scanToken)
	reads     atomic.Uint64 // record files read (RecordReads)
}

// RecordReads is how many record files this store has read since it was made: what a caller's lookups
// cost the state directory (the sidecar's metrics show it).
func (l *Store) RecordReads() uint64 { return l.reads.Load() }

// WorkersDir is the directory that holds one record per detached worker; a watcher (the sidecar) may
// watch it for changes. Its files are the launcher's: read them through Get and List.
func (l *Store) WorkersDir() string { return l.StatePath + "/workers" }

// Sources is the launcher's fingerprint sources for one pass over many records (List, Ledger): the
// machine id read once, now, for all of them (the boot id is the launcher's already: KeepBootID). A
// machine id rewritten on disk during the pass is seen by the next one.
func (l *Store) Sources() fingerprint.Sources { return l.Src.Pinned() }

// KeysDir holds the key locks.
func (l *Store) KeysDir() string { return filepath.Join(l.StatePath, "keys") }

// HolderName is the name of key's holder entry in the keys directory.
func HolderName(key string) string { return IndexName(key) + ".holder" }

// LedgerAdded counts one ledger record a launch of this store's launcher is writing (its shim's), so that
// PruneLedger counts it without reading the directory again.
func (l *Store) LedgerAdded() { l.ledgerIdx.added() }

// PruneLedger removes the ledger records beyond keep (0: no bound) and those older than maxAge (0: no age
// limit), newest kept, never one whose execution has not ended. Age is the record file's last write (the
// end, for an ended execution). It returns how many went. It works from the store's ledgerIndex: the
// directory is scanned when the index is older than ledgerRescan, and again when the records it holds are
// used up while the ledger is still over its bound.
func (l *Store) PruneLedger(keep int, maxAge time.Duration) int {
	if keep == 0 && maxAge == 0 {
		return 0
	}
	x := &l.ledgerIdx
	x.mu.Lock()
	defer x.mu.Unlock()
	var old time.Time
	if maxAge > 0 {
		old = time.Now().Add(-maxAge)
	}
	scanned := false
	if x.scanned.IsZero() || time.Since(x.scanned) >= ledgerRescan(maxAge) {
		if x.scan(l.LedgerPath) != nil {
			return 0
		}
		scanned = true
	}
	boot := ""
	if l.Src.BootID != nil {
		if b, err := l.Src.BootID(); err == nil {
			boot = strings.TrimSpace(b)
		}
	}
	n := x.prune(l.LedgerPath, keep, old, boot)
	if !scanned && len(x.order) == 0 && keep > 0 && x.count > keep {
		if x.scan(l.LedgerPath) != nil {
			return n
		}
		n += x.prune(l.LedgerPath, keep, old, boot)
	}
	return n
}
