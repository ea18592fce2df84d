package state

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
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

// Discard removes a record and the temp files a writer killed mid-write left of it, nothing of another
// record's.
func TestDiscard(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"w-1", "w-12"} {
		if err := d.Write(n, map[string]string{"id": n}, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, tmp := range []string{".w-1.tmp-123", ".w-12.tmp-456"} {
		if err := os.WriteFile(filepath.Join(d.Path, tmp), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Discard("w-1"); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if want := []string{".w-12.tmp-456", "w-12.json"}; !slices.Equal(left, want) {
		t.Fatalf("after Discard(w-1): %v, want %v", left, want)
	}
	if err := d.Discard("w-1"); err != nil {
		t.Fatalf("Discard of a missing record: %v", err)
	}
}
