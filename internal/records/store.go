package records

import (
	"path/filepath"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
)

// Store is a launcher's records: its state directory (one record per detached worker, the token index,
// the quarantine) and its ledger directory (one execution record per worker, kept past the worker).
type Store struct {
	StatePath  string // state directory
	LedgerPath string // ledger directory
	Src        fingerprint.Sources
}

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
