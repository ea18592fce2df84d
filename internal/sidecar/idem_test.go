package sidecar

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
	st, err := newIdemStore(dir, clock)
	if err != nil {
		t.Fatal(err)
	}
	st.maxKeys = maxKeys
	for i := range maxKeys + 2 {
		now = now.Add(time.Millisecond)
		if err := st.put(&idemEntry{Key: fmt.Sprint("k", i), Body: "h", ID: "w-000000000001", Created: now}); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != maxKeys {
		t.Fatalf("%d key files, want %d", len(ents), maxKeys)
	}
	for _, k := range []string{"k0", "k1"} {
		if e, _ := st.get(k); e != nil {
			t.Fatalf("%s, among the oldest past the bound, is still remembered", k)
		}
	}
	if e, _ := st.get("k2"); e == nil || e.ID != "w-000000000001" {
		t.Fatalf("k2: %+v, want it remembered", e)
	}
	if err := os.WriteFile(dir+"/.tmp-123", []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(IdemMaxAge - time.Second)
	st2, err := newIdemStore(dir, clock)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := st2.get(fmt.Sprint("k", maxKeys+1)); e == nil {
		t.Fatal("the newest key is lost across a reopen")
	}
	if _, err := os.Stat(dir + "/.tmp-123"); !os.IsNotExist(err) {
		t.Fatalf("a temp file survives a reopen: %v", err)
	}
	now = now.Add(time.Hour)
	if e, _ := st2.get(fmt.Sprint("k", maxKeys+1)); e != nil {
		t.Fatal("a key past IdemMaxAge is still remembered")
	}
}

// TestCheckIdemKey: 1..128 printable ASCII characters, space included.
func TestCheckIdemKey(t *testing.T) {
	for k, ok := range map[string]bool{
		"a": true, "cron-42 run/7": true, strings.Repeat("k", 128): true,
		"": false, strings.Repeat("k", 129): false, "tab\t": false, "é": false, "nl\n": false, "\x7f": false,
	} {
		if err := checkIdemKey(k); (err == nil) != ok {
			t.Errorf("checkIdemKey(%q) = %v, want ok %v", k, err, ok)
		}
	}
}
