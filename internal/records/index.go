package records

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// The state directory's indexes map a --key to the worker that last took it (keys/<hash>.holder.json,
// beside the key's lock) and a token to the worker whose record carries it (index/<hash>.json), so that a
// keyed launch and a token lookup read one record instead of all of them. An index is a cache: every
// entry is confirmed against the record it names, and one that is missing, damaged or names a record
// that does not carry its key or token is rebuilt from the records (a scan of them all).

// IndexEntry is one index file: the worker id a key or a token maps to, and the key or token itself, so
// that a hash collision or an entry copied to another name is never taken for a match.
type IndexEntry struct {
	Key   string `json:"key,omitempty"`
	Token string `json:"token,omitempty"`
	ID    string `json:"id"`
}

// IndexName is the file name (without .json) an index keeps s under.
func IndexName(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// readRaw reads worker id's record file as it is: ErrNotFound when there is none, the read's or decode's
// error (state.ErrDamaged ...) when it cannot be read; nothing in it is checked (CheckRecord does that).
func (l *Store) readRaw(id string) (worker.Receipt, error) {
	l.reads.Add(1)
	var rc worker.Receipt
	if err := (&state.Dir{Path: l.WorkersDir()}).Read(id, &rc); err != nil {
		if errors.Is(err, state.ErrNotFound) {
			return worker.Receipt{}, fmt.Errorf("%w: %s (state dir %s)", worker.ErrNotFound, id, l.StatePath)
		}
		return rc, err
	}
	return rc, nil
}

// indexDir is the directory of the token index.
func (l *Store) indexDir() string { return filepath.Join(l.StatePath, "index") }

// ReadRecord reads worker id's record: the one function that reads a record from the state directory
// (ErrNotFound, wrapped, when there is none). The record must name id itself: the id names files beside it
// (<id>.exit, the ledger's).
func (l *Store) ReadRecord(id string) (worker.Receipt, error) {
	rc, err := l.readRaw(id)
	if err != nil {
		return worker.Receipt{}, err
	}
	if rc.ID != id {
		return worker.Receipt{}, fmt.Errorf("%w: record %s names worker id %q", worker.ErrInvalid, id, rc.ID)
	}
	return rc, nil
}

// readEntry reads the index entry for s in dir; ok is false when there is none or it is damaged.
func readEntry(dir, s string) (IndexEntry, bool) {
	var e IndexEntry
	if err := (&state.Dir{Path: dir}).Read(IndexName(s), &e); err != nil || !worker.IsID(e.ID) {
		return IndexEntry{}, false
	}
	return e, true
}

// writeEntry stores e for s in dir (made if missing, checked as the records' directories are). durable as
// StatePath.Dir.Write: a key's holder is written durable, as a record is, so that a power loss cannot leave a
// record newer than the entry that should name it.
func writeEntry(dir, s string, e IndexEntry, durable bool) error {
	d, err := state.Open(dir)
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	if err := d.Write(IndexName(s), e, durable); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	return nil
}

// byToken returns the record carrying exactly token (ADR 0009's rule (a)), found through the token index
// and confirmed; ok is false when no record carries it. A missing or wrong entry is rebuilt from a scan of
// the records this store has not indexed yet (scanToken): rewritten when a record carries the token,
// removed when none does.
func (l *Store) byToken(token string) (worker.Receipt, bool) {
	dir := l.indexDir()
	if e, ok := readEntry(dir, token); ok && e.Token == token {
		if rc, err := l.ReadRecord(e.ID); err == nil && rc.Token == token {
			return rc, true
		}
	}
	rc, found := l.scanToken(token)
	if !found {
		_ = (&state.Dir{Path: dir}).Remove(IndexName(token))
	}
	return rc, found
}

// tokenIndexed is what a long-lived store (the sidecar's) knows of its records' tokens: each record a scan
// has read, with its token. A token no record carries (anyone can mint one: the codec is public) then costs
// one listing of the records' names and a read of only the records not seen before, instead of a read of
// every record on every lookup; a token whose index entry was lost or overwritten is found through the
// record it was seen in.
type tokenIndexed struct {
	mu     sync.Mutex
	seen   map[string]string // worker id -> the token its record carried when read
	tokens map[string]string // token -> worker id
}

// scanToken finds the record carrying exactly token: the one this store saw carrying it, else one among
// the records it has not read yet, indexing (in memory and in the index directory) each token it reads on
// the way. A record that cannot be read is read again by the next scan; ids no longer listed are
// forgotten.
func (l *Store) scanToken(token string) (worker.Receipt, bool) {
	x := &l.tokenIdx
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.seen == nil {
		x.seen, x.tokens = map[string]string{}, map[string]string{}
	}
	if id, ok := x.tokens[token]; ok {
		if rc, err := l.ReadRecord(id); err == nil && rc.Token == token {
			_ = writeEntry(l.indexDir(), token, IndexEntry{Token: token, ID: id}, false)
			return rc, true
		}
		delete(x.tokens, token)
		delete(x.seen, id)
	}
	ids, err := (&state.Dir{Path: l.WorkersDir()}).Names("w-")
	if err != nil {
		return worker.Receipt{}, false
	}
	listed := make(map[string]struct{}, len(ids))
	var found worker.Receipt
	ok := false
	for _, id := range ids {
		if !worker.IsID(id) {
			continue
		}
		listed[id] = struct{}{}
		if _, done := x.seen[id]; done {
			continue
		}
		rc, err := l.ReadRecord(id)
		if err != nil {
			continue
		}
		x.seen[id] = rc.Token
		if rc.Token == "" {
			continue
		}
		x.tokens[rc.Token] = id
		_ = writeEntry(l.indexDir(), rc.Token, IndexEntry{Token: rc.Token, ID: id}, false)
		if rc.Token == token {
			found, ok = rc, true
		}
	}
	for id, tok := range x.seen {
		if _, ok := listed[id]; !ok {
			delete(x.seen, id)
			if x.tokens[tok] == id {
				delete(x.tokens, tok)
			}
		}
	}
	return found, ok
}

// IndexToken adds a started worker's token to the index. A failure leaves the entry missing, which the
// next lookup rebuilds.
func (l *Store) IndexToken(rc *worker.Receipt) {
	if rc != nil && rc.Token != "" && worker.IsID(rc.ID) {
		_ = writeEntry(l.indexDir(), rc.Token, IndexEntry{Token: rc.Token, ID: rc.ID}, false)
	}
}

// Unindex removes a removed worker's token entry and its key's holder entry (gc), each when it names that
// worker, so that distinct keys and tokens leave no entries behind their records. An entry a concurrent
// launch wrote between the read and the removal is lost: the next lookup rebuilds it from the records.
func (l *Store) Unindex(rc worker.Receipt) {
	if rc.Token != "" {
		if e, ok := readEntry(l.indexDir(), rc.Token); ok && e.ID == rc.ID {
			_ = (&state.Dir{Path: l.indexDir()}).Remove(IndexName(rc.Token))
		}
	}
	if rc.Key != "" {
		keys := &state.Dir{Path: l.KeysDir()}
		var e IndexEntry
		if err := keys.Read(HolderName(rc.Key), &e); err == nil && e.Key == rc.Key && e.ID == rc.ID {
			_ = keys.Remove(HolderName(rc.Key))
		}
	}
}

// Load finds a worker by id (its record) or by token (the token alone is enough to verify and signal).
func (l *Store) Load(ref string) (worker.Receipt, fingerprint.Identity, error) {
	if worker.IsID(ref) {
		rc, err := l.readRaw(ref)
		if errors.Is(err, worker.ErrNotFound) {
			return worker.Receipt{}, fingerprint.Identity{}, err
		}
		ident, err := CheckRecord(ref, rc, err)
		if err != nil {
			return worker.Receipt{ID: ref}, fingerprint.Identity{}, err // a *DamagedError
		}
		return rc, ident, nil
	}
	ident, err := fingerprint.ParseToken(ref)
	if err != nil {
		return worker.Receipt{}, fingerprint.Identity{}, fmt.Errorf("%w: not a worker id (w-<12 hex>) nor a valid token: %w", worker.ErrInvalid, err)
	}
	// A token of a worker we recorded gets its record's detail (profile, exit status). A token without a
	// record is verified like any other (status answers), but it is no authority to signal (owns): anyone
	// can mint one, the codec is public.
	// The record is found through the token index and confirmed to carry exactly this token.
	if rc, ok := l.byToken(ref); ok {
		return rc, ident, nil
	}
	return receiptOf(ident), ident, nil
}

// receiptOf is the receipt a bare token implies.
func receiptOf(i fingerprint.Identity) worker.Receipt {
	rc := worker.Receipt{
		Token: i.Token(), PID: i.PID, Cgroup: i.Cgroup, CgroupID: i.CgroupID, Unit: i.Unit,
		InvocationID: i.InvocationID, BootID: i.BootID, MachineID: i.MachineID, StartTime: i.Start,
		InstantiationEpoch: i.Epoch(), Fingerprint: i.Fingerprint(), Verification: "verified",
	}
	if i.Unverified {
		rc.Verification = "unverified"
	}
	return rc
}
