package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Check refuses every directory that is not the launcher's alone, and what is below it.
func TestCheck(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	good := mk("good", 0o700)
	readable := mk("readable", 0o755)
	loose := mk("loose", 0o777)
	groupw := mk("groupw", 0o770)
	open := mk("open", 0o777) // not sticky: whatever is below it can be replaced by anyone
	sticky := mk("sticky", 0o777|os.ModeSticky)
	link := filepath.Join(base, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for dir, ok := range map[string]bool{
		good:                          true,
		readable:                      true,
		filepath.Join(good, "absent"): true,
		filepath.Join(sticky, "new"):  true,
		loose:                         false,
		groupw:                        false,
		link:                          false,
		file:                          false,
		filepath.Join(open, "new"):    false,
		filepath.Join(link, "below"):  true, // an ancestor link is followed: what it leads to is checked
	} {
		err := Check(dir)
		if ok && err != nil {
			t.Errorf("Check(%s) = %v, want nil", dir, err)
		}
		if !ok && !errors.Is(err, ErrUntrusted) {
			t.Errorf("Check(%s) = %v, want ErrUntrusted", dir, err)
		}
	}
	if os.Geteuid() == 0 {
		other := mk("other", 0o700)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := Check(other); !errors.Is(err, ErrUntrusted) {
			t.Errorf("Check(a directory of uid 65534) = %v, want ErrUntrusted", err)
		}
		if _, err := Open(filepath.Join(other, "sub")); !errors.Is(err, ErrUntrusted) {
			t.Errorf("Open below another user's directory = %v, want ErrUntrusted", err)
		}
	}
	// Open creates what is missing and checks it; a symbolic link in a record's place is refused.
	d, err := Open(filepath.Join(good, "w"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(d.Path, "w-1.json")); err != nil {
		t.Fatal(err)
	}
	var v any
	if err := d.Read("w-1", &v); err == nil {
		t.Fatal("Read followed a symbolic link planted in a record's place")
	}
}

// CheckTree checks a state dir once and each directory below it for itself; a sub elsewhere in full.
func TestCheckTree(t *testing.T) {
	base := t.TempDir()
	st := filepath.Join(base, "state")
	if err := os.MkdirAll(filepath.Join(st, "workers"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := CheckTree(st, filepath.Join(st, "workers"), filepath.Join(st, "keys"), "ledger"); err != nil {
		t.Fatalf("a good tree: %v", err)
	}
	if err := os.Symlink(base, filepath.Join(st, "keys")); err != nil {
		t.Fatal(err)
	}
	if err := CheckTree(st, filepath.Join(st, "keys")); !errors.Is(err, ErrUntrusted) {
		t.Errorf("a link in the tree = %v, want ErrUntrusted", err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := CheckTree(st, filepath.Join(open, "ledger")); !errors.Is(err, ErrUntrusted) {
		t.Errorf("a ledger under a world-writable directory elsewhere = %v, want ErrUntrusted", err)
	}
	if err := CheckTree(st, filepath.Join(st, "..", "open", "ledger")); !errors.Is(err, ErrUntrusted) {
		t.Errorf("a sub that leaves the tree by .. = %v, want ErrUntrusted", err)
	}
}
