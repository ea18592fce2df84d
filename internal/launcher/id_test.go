package launcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Only NewWorkerID's spelling is a worker id: anything else is not a record's name.
func TestIsID(t *testing.T) {
	for ref, want := range map[string]bool{
		worker.NewWorkerID(): true, "w-0123456789ab": true,
		"w-0123456789AB": false, "W-0123456789ab": false, "w-0123456789a": false, "w-0123456789abc": false,
		"w-../../../etc": false, "w-01234/6789ab": false, "w-0123456789a\x00": false, "w-0x23456789ab": false,
		"w-+123456789ab": false, " w-0123456789ab": false, "": false,
	} {
		if got := worker.IsID(ref); got != want {
			t.Errorf("IsID(%q) = %v, want %v", ref, got, want)
		}
	}
}

// A record whose id field is not its file's name is refused: the id names the files beside it.
func TestRecordIDMustBeItsName(t *testing.T) {
	root := filepath.Join(t.TempDir(), "hermes")
	if err := os.MkdirAll(filepath.Join(root, "profiles"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := New(Config{Root: root, StateDir: filepath.Join(t.TempDir(), "state"), Environ: []string{"PATH=/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := state.Open(l.WorkersDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write("w-0123456789ab", worker.Receipt{ID: "../../../tmp/x"}, false); err != nil {
		t.Fatal(err)
	}
	// It is listed as corrupt under its file's name, never under the id it names.
	if rec, err := l.Get(context.Background(), "w-0123456789ab"); err != nil || rec.State != worker.StateCorrupt || rec.ID != "w-0123456789ab" ||
		!strings.Contains(rec.RecordError, "../../../tmp/x") {
		t.Fatalf("Get of a record naming another id = %+v, %v; want state corrupt under its file's name", rec, err)
	}
	if _, err := l.Stop(context.Background(), "w-0123456789ab", 0); !errors.Is(err, worker.ErrInvalid) || !errors.Is(err, worker.ErrRefused) {
		t.Fatalf("Stop of a record naming another id = %v, want ErrInvalid and ErrRefused", err)
	}
}
