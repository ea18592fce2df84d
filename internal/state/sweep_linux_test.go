package state

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// SweepTemps removes the temp files of dead writers (old, unlocked) and nothing else: not a fresh one (its
// writer may be about to lock it), not one a live writer holds locked however old, not a symbolic link
// or a FIFO in a temp file's name (never followed, never blocked on), not a record or another dot file.
func TestSweepTemps(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write("w-1", map[string]int{"a": 1}, true); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * tempGrace)
	plant := func(name string, when time.Time) string {
		p := filepath.Join(d.Path, name)
		if err := os.WriteFile(p, []byte("{\"half"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plant(".w-2.tmp-123", old)           // a shim killed between its temp file and the rename
	plant(".w-3.exit.tmp-4567", old)     // the same, of an exit record
	plant(".w-4.tmp-99", time.Now())     // a writer at work, perhaps before its lock
	plant(".w-5.tmp-abc", old)           // not Write's shape: not Write's file
	plant(".hidden", old)                // nor this
	locked := plant(".w-6.tmp-777", old) // a live writer that has stalled, holding its lock
	f, err := os.Open(locked)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	// A symbolic link in a temp file's name, to a file outside, both old: the link is not followed (the
	// target is neither opened for the lock nor removed) and is left where it is.
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(target, old, old); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(d.Path, ".w-7.tmp-1")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	ts := []unix.Timespec{unix.NsecToTimespec(old.UnixNano()), unix.NsecToTimespec(old.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, link, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(d.Path, ".w-8.tmp-2")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, fifo, ts, 0); err != nil {
		t.Fatal(err)
	}

	n, err := d.SweepTemps()
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("SweepTemps removed %d, want 2", n)
	}
	want := []string{".hidden", ".w-4.tmp-99", ".w-5.tmp-abc", ".w-6.tmp-777", ".w-7.tmp-1", ".w-8.tmp-2", "w-1.json"}
	if got := names(t, d.Path); !slices.Equal(got, want) {
		t.Errorf("after the sweep: %v, want %v", got, want)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep" {
		t.Errorf("the link's target: %q, %v", b, err)
	}
	// The writer ends (its lock with it): its temp file is a dead writer's now.
	f.Close()
	if n, err := d.SweepTemps(); err != nil || n != 1 {
		t.Errorf("after the writer's end: SweepTemps = %d, %v; want 1", n, err)
	}
	if _, err := os.Lstat(locked); !os.IsNotExist(err) {
		t.Errorf("the dead writer's temp file is still there: %v", err)
	}
	// A record written after a sweep is written as ever; a missing directory has nothing to sweep.
	if err := d.Write("w-1", map[string]int{"a": 2}, false); err != nil {
		t.Fatal(err)
	}
	if n, err := (&Dir{Path: filepath.Join(d.Path, "absent")}).SweepTemps(); n != 0 || err != nil {
		t.Errorf("a missing directory: %d, %v", n, err)
	}
}

// The lock Write takes on its temp file (lockTemp, held until after the rename) keeps a sweep off it
// however old the file looks: without it, a writer stalled mid-write would have its temp file taken.
func TestLockTempHoldsOffTheSweep(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(d.Path, ".w-1"+tempInfix+"*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := lockTemp(f); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * tempGrace)
	if err := os.Chtimes(f.Name(), old, old); err != nil {
		t.Fatal(err)
	}
	if n, err := d.SweepTemps(); n != 0 || err != nil {
		t.Fatalf("a locked temp file: SweepTemps = %d, %v; want 0", n, err)
	}
}

func TestIsTempName(t *testing.T) {
	for name, want := range map[string]bool{
		".w-1.tmp-1": true, ".w-1.exit.tmp-4294967295": true, ".x.tmp-12": true,
		"w-1.tmp-1": false, ".w-1.tmp-": false, ".w-1.tmp-1a": false, "..tmp-1": false, ".tmp-1": false, "w-1.json": false,
	} {
		if got := isTempName(name); got != want {
			t.Errorf("isTempName(%q) = %v, want %v", name, got, want)
		}
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
