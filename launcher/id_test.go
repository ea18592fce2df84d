package launcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hlaunch/hlaunch/internal/state"
)

// Only newID's spelling is a worker id: anything else is not a record's name.
func TestIsID(t *testing.T) {
	for ref, want := range map[string]bool{
		newID(): true, "w-0123456789ab": true,
		"w-0123456789AB": false, "W-0123456789ab": false, "w-0123456789a": false, "w-0123456789abc": false,
		"w-../../../etc": false, "w-01234/6789ab": false, "w-0123456789a\x00": false, "w-0x23456789ab": false,
		"w-+123456789ab": false, " w-0123456789ab": false, "": false,
	} {
		if got := isID(ref); got != want {
			t.Errorf("isID(%q) = %v, want %v", ref, got, want)
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
	d, err := state.Open(l.workersDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write("w-0123456789ab", Receipt{ID: "../../../tmp/x"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(context.Background(), "w-0123456789ab"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Get of a record naming another id = %v, want ErrInvalid", err)
	}
	if _, err := l.Stop(context.Background(), "w-0123456789ab", 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Stop of a record naming another id = %v, want ErrInvalid", err)
	}
}
