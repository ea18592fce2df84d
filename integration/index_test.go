package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The state directory's indexes through the CLI: a key's holder entry deleted, damaged or naming a missing
// record is rebuilt, and the key stays held while its holder runs and free once it ended; the token index
// removed, a token still finds its record; ps pages with --limit and --after.
func TestIndexRebuiltCLI(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	flags := []string{"--scope", "cgroup", "--cgroup-parent", e.Parent, "--key", "cron-index"}
	first := e.detach(flags, selfBin, "child", "sleep", "60s")
	sum := sha256.Sum256([]byte("cron-index"))
	entry := filepath.Join(e.State, "keys", hex.EncodeToString(sum[:16])+".holder.json")
	if b, err := os.ReadFile(entry); err != nil || !strings.Contains(string(b), first.ID) {
		t.Fatalf("holder entry after the launch: %q, %v; want it to name %s", b, err, first.ID)
	}
	args := append([]string{"exec", "-p", "b", "--detach"}, flags...)
	damage := map[string]func() error{
		"deleted":        func() error { return os.Remove(entry) },
		"damaged":        func() error { return os.WriteFile(entry, []byte("{"), 0o600) },
		"missing record": func() error { return os.WriteFile(entry, []byte(`{"key":"cron-index","id":"w-00000000dead"}`), 0o600) },
	}
	for name, f := range damage {
		if err := f(); err != nil {
			t.Fatal(err)
		}
		if r := e.run(append(args, "--", "true")...); r.Code != 73 || !strings.Contains(r.Stderr, first.ID) {
			t.Fatalf("holder entry %s: second start: exit %d %q, want 73 naming %s", name, r.Code, r.Stderr, first.ID)
		}
	}
	// The token index gone: the token still finds its record.
	if err := os.RemoveAll(filepath.Join(e.State, "index")); err != nil {
		t.Fatal(err)
	}
	if rc, r := e.record(first.Token); r.Code != 0 || rc.ID != first.ID {
		t.Fatalf("status by token without the index: exit %d, id %q, want %s", r.Code, rc.ID, first.ID)
	}
	if r := e.run("stop", first.ID); r.Code != 0 {
		t.Fatalf("stop: exit %d %s", r.Code, r.Stderr)
	}
	if err := os.WriteFile(entry, []byte(`{"key":"cron-index","id":"w-00000000dead"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	second := e.detach(flags, "true")
	if r := e.run("wait", "--timeout", "60s", second.ID); r.Code != 0 {
		t.Fatalf("wait: exit %d %s", r.Code, r.Stderr)
	}
	// Two records: pages of one, the second after the first's id.
	var page1, page2 []receipt
	r1 := e.run("ps", "--json", "--limit", "1")
	if err := json.Unmarshal([]byte(r1.Stdout), &page1); err != nil || len(page1) != 1 {
		t.Fatalf("ps --limit 1: %q %v", r1.Stdout, err)
	}
	r2 := e.run("ps", "--json", "--limit", "1", "--after", page1[0].ID)
	if err := json.Unmarshal([]byte(r2.Stdout), &page2); err != nil || len(page2) != 1 || page2[0].ID <= page1[0].ID {
		t.Fatalf("ps --after %s: %q %v", page1[0].ID, r2.Stdout, err)
	}
	for _, bad := range [][]string{{"--limit", "-1"}, {"--after", "x"}} {
		if r := e.run(append([]string{"ps"}, bad...)...); r.Code != 125 || !strings.Contains(r.Stderr, bad[0]) {
			t.Errorf("ps %v: exit %d %q, want 125 naming %s", bad, r.Code, r.Stderr, bad[0])
		}
	}
}
