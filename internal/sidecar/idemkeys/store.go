package idemkeys

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hlaunch/hlaunch/internal/records"
)

// Bounds of the idempotency keys a sidecar remembers (POST /v1/workers with Idempotency-Key). A key is
// forgotten MaxAge after its first spawn, or earlier when MaxKeys are kept: then the peer uid that
// holds the most keys loses its oldest, so that a peer sending new keys without end evicts its own.
const (
	MaxKeys   = 10000
	MaxAge    = 24 * time.Hour
	maxKeyLen = 128
)

// Header is the request header that names a spawn's idempotency key.
const Header = "Idempotency-Key"

// ErrBadKey: an Idempotency-Key header that is not 1..128 printable ASCII (400 invalid, reason
// bad_idempotency_key).
var ErrBadKey = errors.New("bad idempotency key")

// Entry is one remembered key of one peer uid (a key is its peer's own: another uid's same key is
// another entry), a file of its own in the key directory, written atomically: first
// before the launch (ID set, Receipt empty), then with the receipt once the launch answered. An entry
// without a receipt after a restart is a launch the sidecar did not see the end of; the worker record
// under ID says whether it started.
type Entry struct {
	UID     uint32          `json:"uid"` // the peer that sent the key
	Key     string          `json:"key"`
	Body    string          `json:"body_sha256"`
	ID      string          `json:"id"`
	Created time.Time       `json:"created"`
	Receipt json.RawMessage `json:"receipt,omitempty"`
}

// Store remembers idempotency keys in dir (one file per peer uid and key, named by their hash) and
// serializes the spawns of one uid's key in this process: a retry that arrives while the first spawn with its key is still
// in flight waits for that spawn's end and then gets its answer.
type Store struct {
	dir string
	now func() time.Time
	// maxKeys and maxAge are the bounds: MaxKeys and MaxAge.
	maxKeys int
	maxAge  time.Duration

	mu    sync.Mutex
	locks map[string]*idemLock // by file name
	known map[string]idemKnown // by file name, for the bounds
}

// idemKnown is what the bounds need of one kept key.
type idemKnown struct {
	uid     uint32
	created time.Time
}

type idemLock struct {
	mu   sync.Mutex
	refs int
}

// Open opens (making it 0700) dir and reads what keys it holds, dropping those past the bounds.
func Open(dir string, now func() time.Time) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("idempotency keys: %w", err)
	}
	st := &Store{dir: dir, now: now, maxKeys: MaxKeys, maxAge: MaxAge, locks: map[string]*idemLock{}, known: map[string]idemKnown{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("idempotency keys: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			_ = os.Remove(filepath.Join(dir, name)) // a temp file of a write that did not finish
			continue
		}
		ent, err := st.read(name)
		if err != nil || name != idemFile(ent.UID, ent.Key) {
			// Unreadable, or not found under its name (a key kept before keys were per uid).
			_ = os.Remove(filepath.Join(dir, name))
			continue
		}
		st.known[name] = idemKnown{ent.UID, ent.Created}
	}
	st.mu.Lock()
	st.pruneLocked()
	st.mu.Unlock()
	return st, nil
}

// CheckKey checks an Idempotency-Key header: 1 to 128 printable ASCII characters.
func CheckKey(k string) error {
	if k == "" || len(k) > maxKeyLen {
		return fmt.Errorf("%w: header %s: want 1 to %d printable ASCII characters, got %d bytes", ErrBadKey, Header, maxKeyLen, len(k))
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return fmt.Errorf("%w: header %s: byte %d (0x%02x) is not printable ASCII", ErrBadKey, Header, i, k[i])
		}
	}
	return nil
}

// idemFile names uid's key's file: a key is printable ASCII and a uid decimal digits, so "uid:key" is
// never another pair's.
func idemFile(uid uint32, key string) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%d:%s", uid, key))
	return hex.EncodeToString(h[:16]) + ".json"
}

// BodyHash is the hash a repeat's body is compared by: byte for byte.
func BodyHash(body []byte) string {
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:])
}

// Lock serializes uid's spawns with key in this process; the returned func releases it.
func (st *Store) Lock(uid uint32, key string) func() {
	key = idemFile(uid, key)
	st.mu.Lock()
	l := st.locks[key]
	if l == nil {
		l = &idemLock{}
		st.locks[key] = l
	}
	l.refs++
	st.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		st.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(st.locks, key)
		}
		st.mu.Unlock()
	}
}

// Get returns uid's entry of key, or nil when uid's key is not remembered (never, or past MaxAge).
// Call it under Lock(uid, key).
func (st *Store) Get(uid uint32, key string) (*Entry, error) {
	name := idemFile(uid, key)
	ent, err := st.read(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if ent.UID != uid || ent.Key != key || st.now().Sub(ent.Created) > st.maxAge {
		return nil, nil // another key of the same hash prefix, or expired: this key starts afresh
	}
	return ent, nil
}

func (st *Store) read(name string) (*Entry, error) {
	b, err := os.ReadFile(filepath.Join(st.dir, name))
	if err != nil {
		return nil, err
	}
	var ent Entry
	if err := json.Unmarshal(b, &ent); err != nil {
		return nil, fmt.Errorf("idempotency key file %s: %w", name, err)
	}
	return &ent, nil
}

// Put writes ent atomically (a temp file, synced, renamed over the old one, the directory synced) so that
// a crash leaves the old entry or the new one. Call it under Lock(ent.UID, ent.Key).
func (st *Store) Put(ent *Entry) error {
	b, err := json.Marshal(ent)
	if err != nil {
		return err
	}
	name := idemFile(ent.UID, ent.Key)
	tmp, err := os.CreateTemp(st.dir, ".tmp-")
	if err != nil {
		return records.WriteError("idempotency key", st.dir, err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(st.dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return records.WriteError("idempotency key", st.dir, err)
	}
	if d, err := os.Open(st.dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	st.mu.Lock()
	st.known[name] = idemKnown{ent.UID, ent.Created}
	st.pruneLocked()
	st.mu.Unlock()
	return nil
}

// Forget removes uid's entry of key (a launch that failed is not remembered: a retry launches again).
func (st *Store) Forget(uid uint32, key string) {
	name := idemFile(uid, key)
	_ = os.Remove(filepath.Join(st.dir, name))
	st.mu.Lock()
	delete(st.known, name)
	st.mu.Unlock()
}

// pruneLocked drops entries older than maxAge, then, while more than maxKeys are kept, the oldest of the
// uid that holds the most (of two that hold as many, the one whose oldest is older): one uid's flood of
// keys evicts its own, never another uid's while it holds more than that uid.
func (st *Store) pruneLocked() {
	now := st.now()
	for name, k := range st.known {
		if now.Sub(k.created) > st.maxAge {
			_ = os.Remove(filepath.Join(st.dir, name))
			delete(st.known, name)
		}
	}
	over := len(st.known) - st.maxKeys
	if over <= 0 {
		return
	}
	byUID := map[uint32][]string{}
	for name, k := range st.known {
		byUID[k.uid] = append(byUID[k.uid], name)
	}
	for _, names := range byUID {
		slices.SortFunc(names, func(a, b string) int { return st.known[a].created.Compare(st.known[b].created) })
	}
	for range over {
		var most uint32
		var top []string
		for uid, names := range byUID {
			if len(names) > len(top) || (len(names) == len(top) && st.known[names[0]].created.Before(st.known[top[0]].created)) {
				most, top = uid, names
			}
		}
		_ = os.Remove(filepath.Join(st.dir, top[0]))
		delete(st.known, top[0])
		byUID[most] = top[1:]
	}
}
