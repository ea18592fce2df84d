package sockfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCreate: the socket appears with the mode asked for and goes with its cleanup; a path that is not a
// socket is refused and left as it was.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.sock")
	ln, cleanup, err := Create(path, 0o600, -1)
	if err != nil {
		t.Fatal(err)
	}
	if ln.Addr().String() != path {
		t.Errorf("Addr = %s, want %s", ln.Addr(), path)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket file: %v %v, want a 0600 socket", fi, err)
	}
	cleanup()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after cleanup: %v, want the socket removed", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Create(file, 0o600, -1); !errors.Is(err, ErrNotSocket) {
		t.Fatalf("Create on a regular file: %v, want ErrNotSocket", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep" {
		t.Fatalf("the regular file was touched: %q %v", b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d entries left in the socket directory, want only the file", len(ents))
	}
}
