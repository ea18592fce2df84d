package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReadNamesRemove(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	type rec struct{ A int }
	for i, n := range []string{"w-2", "w-1", "x-1"} {
		if err := d.Write(n, rec{A: i}, i%2 == 0); err != nil {
			t.Fatal(err)
		}
	}
	// A half-written temp file (a crash mid-write) is never listed.
	if err := os.WriteFile(filepath.Join(d.Path, ".w-3.tmp-1"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	names, err := d.Names("w-")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 || names[0] != "w-1" || names[1] != "w-2" {
		t.Fatalf("names = %v", names)
	}
	var r rec
	if err := d.Read("w-1", &r); err != nil || r.A != 1 {
		t.Fatalf("read = %v, %v", r, err)
	}
	if err := d.Remove("w-1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Read("w-1", &r); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read after remove: %v", err)
	}
	if err := d.Remove("w-1"); err != nil {
		t.Fatalf("second remove: %v", err)
	}
}
