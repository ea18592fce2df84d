package peerstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestPeerStore: a worker's peer uid is read back as written, a damaged or foreign file names no uid, and
// a sweep keeps only the workers it is told to (and no temp file).
func TestPeerStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sidecar-peers")
	p, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const a, b = "w-00000000000a", "w-00000000000b"
	if err := p.Put(a, 1002); err != nil {
		t.Fatal(err)
	}
	if err := p.Put("../x", 1002); err == nil {
		t.Fatal("put of a name that is no worker id was accepted")
	}
	if uid, ok := p.Get(a); !ok || uid != 1002 {
		t.Fatalf("Get(%s) = %d, %v; want 1002", a, uid, ok)
	}
	for _, bad := range []string{"", "x", "-1", "4294967296", "4294967294"} {
		if err := os.WriteFile(filepath.Join(dir, b), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if uid, ok := p.Get(b); ok {
			t.Fatalf("a file holding %q names uid %d", bad, uid)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".tmp-1"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.Sweep(func(id string) bool { return id == a }); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != a {
		t.Fatalf("after a sweep keeping %s: %v", a, ents)
	}
	p.Forget(a)
	if _, err := os.Stat(filepath.Join(dir, a)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Forget left %s: %v", a, err)
	}
}
