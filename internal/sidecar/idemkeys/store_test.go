package idemkeys

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestIdemStoreBounds: a key is forgotten past its age bound, the oldest go first past the count bound, a
// reopened store keeps what was written and drops temp files of a write that did not finish.
func TestIdemStoreBounds(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	const maxKeys = 50
	st, err := Open(dir, clock)
	if err != nil {
		t.Fatal(err)
	}
	st.maxKeys = maxKeys
	for i := range maxKeys + 2 {
		now = now.Add(time.Millisecond)
		if err := st.Put(&Entry{Key: fmt.Sprint("k", i), Body: "h", ID: "w-000000000001", Created: now}); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != maxKeys {
		t.Fatalf("%d key files, want %d", len(ents), maxKeys)
	}
	for _, k := range []string{"k0", "k1"} {
		if e, _ := st.Get(0, k); e != nil {
			t.Fatalf("%s, among the oldest past the bound, is still remembered", k)
		}
	}
	if e, _ := st.Get(0, "k2"); e == nil || e.ID != "w-000000000001" {
		t.Fatalf("k2: %+v, want it remembered", e)
	}
	if err := os.WriteFile(dir+"/.tmp-123", []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(MaxAge - time.Second)
	st2, err := Open(dir, clock)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := st2.Get(0, fmt.Sprint("k", maxKeys+1)); e == nil {
		t.Fatal("the newest key is lost across a reopen")
	}
	if _, err := os.Stat(dir + "/.tmp-123"); !os.IsNotExist(err) {
		t.Fatalf("a temp file survives a reopen: %v", err)
	}
	now = now.Add(time.Hour)
	if e, _ := st2.Get(0, fmt.Sprint("k", maxKeys+1)); e != nil {
		t.Fatal("a key past MaxAge is still remembered")
	}
}

// TestIdemStoreEvictsTheFlooder: one peer uid sending new keys without end (each a worker that ended at
// once) fills the count bound with its own keys and loses its oldest, never the gateway's older key; and
// the same key of two uids is two entries. On the old code the flood evicted the gateway's key (the
// oldest of all), so the gateway's retry of that spawn launched a second worker.
func TestIdemStoreEvictsTheFlooder(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	st, err := Open(t.TempDir(), func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	st.maxKeys = 20
	const gateway, flooder = 0, 1002
	put := func(uid uint32, key, id string) {
		t.Helper()
		now = now.Add(time.Millisecond)
		if err := st.Put(&Entry{UID: uid, Key: key, Body: "h", ID: id, Created: now}); err != nil {
			t.Fatal(err)
		}
	}
	put(gateway, "job-1", "w-00000000000a")
	put(flooder, "job-1", "w-00000000000b")
	for i := range 3 * st.maxKeys {
		put(flooder, fmt.Sprint("flood-", i), "w-00000000000c")
	}
	if e, _ := st.Get(gateway, "job-1"); e == nil || e.ID != "w-00000000000a" {
		t.Fatalf("the gateway's job-1 after another uid's flood of new keys: %+v, want it kept", e)
	}
	if e, _ := st.Get(flooder, "job-1"); e != nil {
		t.Fatalf("the flooder's own oldest key job-1 is still kept past the bound: %+v", e)
	}
	if e, _ := st.Get(flooder, fmt.Sprint("flood-", 3*st.maxKeys-1)); e == nil {
		t.Fatal("the flooder's newest key is not kept")
	}
	if len(st.known) != st.maxKeys {
		t.Fatalf("%d keys kept, want the bound %d", len(st.known), st.maxKeys)
	}
	// Two uids at one count each past a bound of one: the older key goes, whoever holds it.
	st.maxKeys = 1
	put(gateway, "job-2", "w-00000000000d")
	if e, _ := st.Get(gateway, "job-2"); e == nil || len(st.known) != 1 {
		t.Fatalf("a bound of 1: job-2 %+v, %d kept; want only the newest key kept", e, len(st.known))
	}
}

// TestCheckIdemKey: 1..128 printable ASCII characters, space included.
func TestCheckIdemKey(t *testing.T) {
	for k, ok := range map[string]bool{
		"a": true, "cron-42 run/7": true, strings.Repeat("k", 128): true,
		"": false, strings.Repeat("k", 129): false, "tab\t": false, "é": false, "nl\n": false, "\x7f": false,
	} {
		if err := CheckKey(k); (err == nil) != ok {
			t.Errorf("CheckKey(%q) = %v, want ok %v", k, err, ok)
		}
	}
}
