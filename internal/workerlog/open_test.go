package workerlog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// TestOpenLogRefuses: a log path through a symbolic link, a log that is a FIFO, a log with a second
// hard link, or one its group or others may write is refused (ErrInvalid naming --log) and nothing is created where the link pointed; a plain
// path is created, appended to and rotated; a log whose directory is missing is refused and nothing is
// created.
func TestOpenLogRefuses(t *testing.T) {
	dir := t.TempDir()
	elsewhere := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(elsewhere, filepath.Join(dir, "link")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.log"), 0o600))
	must(os.WriteFile(filepath.Join(elsewhere, "victim"), []byte("keep"), 0o600))
	must(os.Link(filepath.Join(elsewhere, "victim"), filepath.Join(dir, "hard.log")))
	must(os.WriteFile(filepath.Join(dir, "open.log"), nil, 0o600))
	must(os.Chmod(filepath.Join(dir, "open.log"), 0o666)) // anyone may write (or had made) it
	for _, p := range []string{
		filepath.Join(dir, "open.log"),
		filepath.Join(dir, "link", "w.log"), filepath.Join(dir, "link", "new", "w.log"),
		filepath.Join(dir, "fifo.log"), filepath.Join(dir, "hard.log"), filepath.Join(dir, "link"),
	} {
		f, err := Open(p, 0)
		if err == nil {
			f.Close()
		}
		if !errors.Is(err, worker.ErrInvalid) || !strings.Contains(err.Error(), "--log") {
			t.Errorf("Open(%s) = %v, want ErrInvalid naming --log", p, err)
		}
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 1 {
		t.Fatalf("a refused log created %d entries where the link pointed", len(ents)-1)
	}
	missing := filepath.Join(dir, "a", "b", "w.log")
	if f, err := Open(missing, 0); err == nil || !errors.Is(err, worker.ErrInvalid) || !strings.Contains(err.Error(), "does not exist") {
		if f != nil {
			f.Close()
		}
		t.Fatalf("Open(%s) in a missing directory = %v, want ErrInvalid saying it does not exist", missing, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Fatalf("a refused log made its directory: %v", err)
	}
	good := filepath.Join(dir, "w.log")
	for range 2 {
		f, err := Open(good, 4)
		must(err)
		_, err = f.WriteString("12345")
		must(err)
		f.Close()
	}
	if b, err := os.ReadFile(good + ".1"); err != nil || string(b) != "12345" {
		t.Fatalf("rotation: %q, %v", b, err)
	}
}
