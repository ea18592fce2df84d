package launcher_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// indexFile is where the state directory keeps the index entry for s: the key holders beside the key
// locks (keys/<hash>.holder.json), the tokens in index/<hash>.json.
func indexFile(state, dir, s, suffix string) string {
	sum := sha256.Sum256([]byte(s))
	return filepath.Join(state, dir, hex.EncodeToString(sum[:16])+suffix+".json")
}

// entryID reads an index entry's worker id ("" when there is none).
func entryID(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var e struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return ""
	}
	return e.ID
}

func writeEntry(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A keyed launch finds the key's holder through its index entry, and an entry that is missing, damaged or
// names a record that does not carry the key (a missing one, another worker's) is rebuilt from the records:
// the launch is refused while the holder runs whatever the entry says, and allowed once it has ended, with
// the entry still stale.
func TestKeyIndexRebuilt(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	ctx := context.Background()
	dir := t.TempDir()
	s := spec(`echo up > ` + dir + `/up; while :; do sleep 0.05; done`)
	s.Key = "cron-index"
	holder := w.start(s)
	waitFile(t, dir+"/up")
	entry := indexFile(w.state, "keys", s.Key, ".holder")
	if got := entryID(t, entry); got != holder.ID {
		t.Fatalf("key index names %q after the launch, want the holder %s", got, holder.ID)
	}
	other := spec(`exit 0`)
	other.Key = "cron-other"
	unrelated := w.start(other)
	w.wait(unrelated.ID)

	s.Detach = true
	stale := map[string]func(){
		"deleted":            func() { _ = os.Remove(entry) },
		"damaged":            func() { writeEntry(t, entry, "{not json") },
		"missing record":     func() { writeEntry(t, entry, `{"key":"cron-index","id":"w-00000000dead"}`) },
		"another's record":   func() { writeEntry(t, entry, `{"key":"cron-index","id":"`+unrelated.ID+`"}`) },
		"another key":        func() { writeEntry(t, entry, `{"key":"cron-other","id":"`+holder.ID+`"}`) },
		"a symbolic link":    func() { _ = os.Remove(entry); _ = os.Symlink("/dev/null", entry) },
		"an empty file":      func() { writeEntry(t, entry, "") },
		"an id not a worker": func() { writeEntry(t, entry, `{"key":"cron-index","id":"../x"}`) },
	}
	for name, damage := range stale {
		damage()
		rc, err := w.l.Start(ctx, s)
		if rc != nil {
			w.remember(rc)
		}
		if !errors.Is(err, worker.ErrKeyHeld) || !strings.Contains(err.Error(), holder.ID) {
			t.Fatalf("index %s: launch with the held key: %v; want ErrKeyHeld naming %s", name, err, holder.ID)
		}
		if got := entryID(t, entry); got != holder.ID {
			t.Errorf("index %s: not rebuilt: names %q, want %s", name, got, holder.ID)
		}
	}
	if _, err := w.l.Stop(ctx, holder.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	writeEntry(t, entry, `{"key":"cron-index","id":"w-00000000dead"}`)
	next, err := w.l.Start(ctx, s)
	if err != nil {
		t.Fatalf("launch after the holder ended, with a stale index: %v", err)
	}
	w.remember(next)
	if got := entryID(t, entry); got != next.ID {
		t.Errorf("key index names %q after the second launch, want %s", got, next.ID)
	}
	// Held again, by the new holder, found through the index.
	if rc, err := w.l.Start(ctx, s); !errors.Is(err, worker.ErrKeyHeld) || !strings.Contains(err.Error(), next.ID) {
		if rc != nil {
			w.remember(rc)
		}
		t.Fatalf("launch while the new holder runs: %v; want ErrKeyHeld naming %s", err, next.ID)
	}
}

// A token is found through the token index and the record it names must carry exactly that token: an entry
// mapping the token to another worker's record is never taken (that worker's detail, or its authority to
// be signalled, never answers for the token) and is rebuilt; with the token's own record gone, the token
// is a bare one, which signals refuse.
func TestTokenIndexConfirmed(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	ctx := context.Background()
	dir := t.TempDir()
	a := w.start(spec(`echo up > ` + dir + `/a; while :; do sleep 0.05; done`))
	b := w.start(spec(`echo up > ` + dir + `/b; while :; do sleep 0.05; done`))
	waitFile(t, dir+"/a")
	waitFile(t, dir+"/b")
	entry := indexFile(w.state, "index", a.Token, "")
	if got := entryID(t, entry); got != a.ID {
		t.Fatalf("token index names %q after the launch, want %s", got, a.ID)
	}
	for _, body := range []string{`{"token":"` + a.Token + `","id":"` + b.ID + `"}`, `{"token":"` + b.Token + `","id":"` + b.ID + `"}`, "{x", `{"id":"w-00000000dead"}`} {
		writeEntry(t, entry, body)
		rec, err := w.l.Status(ctx, a.Token)
		if err != nil || rec.ID != a.ID || rec.PID != a.PID {
			t.Fatalf("token of %s with the index entry %s: %+v, %v; want %s's record", a.ID, body, rec, err, a.ID)
		}
		if got := entryID(t, entry); got != a.ID {
			t.Errorf("entry %s not rebuilt: names %q", body, got)
		}
	}
	// a's record removed, the index pointing its token at b: a bare token, not b's record.
	recPath := filepath.Join(w.l.WorkersDir(), a.ID+".json")
	saved, err := os.ReadFile(recPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(recPath); err != nil {
		t.Fatal(err)
	}
	defer func() { writeEntry(t, recPath, string(saved)) }() // back, so that the cleanup stops a by its id
	writeEntry(t, entry, `{"token":"`+a.Token+`","id":"`+b.ID+`"}`)
	var rec worker.Record
	rec, err = w.l.Status(ctx, a.Token)
	if err != nil || rec.ID != "" || rec.PID != a.PID {
		t.Fatalf("token without its record, mapped to %s: %+v, %v; want a bare token's record", b.ID, rec, err)
	}
	if err := w.l.Signal(ctx, a.Token, syscall.SIGTERM, false); err == nil {
		t.Fatalf("a signal by a token without its record (index mapped to %s) was delivered", b.ID)
	}
	if _, err := os.Lstat(entry); err == nil {
		t.Errorf("the wrong entry was kept: %s", entry)
	}
}
