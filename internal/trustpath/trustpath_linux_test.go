package trustpath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// TestCheck: every component from / must be root's or the worker's and writable by nobody else, except a
// root-owned sticky directory; a missing tail is judged by its deepest existing ancestor, and refused
// in one others may write; a link is followed only when its owner passes.
func TestCheck(t *testing.T) {
	testutil.RequireRoot(t, "chown to another uid")
	const worker, other = 54320, 54321
	base := t.TempDir() // root's, 0700, under /tmp (root's, sticky)
	mk := func(rel string, mode os.FileMode, uid int) string {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(target, rel string, uid int) string {
		p := filepath.Join(base, rel)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rootDir := mk("root", 0o755, 0)
	workerDir := mk("worker", 0o700, worker)
	otherDir := mk("other", 0o700, other)
	mk("other/sub", 0o700, worker)
	groupW := mk("groupw", 0o775, worker)
	otherW := mk("otherw", 0o757, 0)
	sticky := mk("sticky", os.ModeSticky|0o777, 0)
	stickyOther := mk("stickyother", os.ModeSticky|0o777, other)
	link(rootDir, "l-root", 0)
	link(otherDir, "l-root-to-other", 0)
	link(rootDir, "l-other", other)
	link("worker", "l-rel", worker)
	link(filepath.Join(otherDir, "sub"), "l-other-sub", other)
	link(filepath.Join(otherDir, "sub"), "l-root-to-other-sub", 0)
	link("worker/../other/sub", "l-rel-dotdot", 0)
	for _, tc := range []struct {
		path string
		bad  string // the component refused, "" when it passes
	}{
		{"/", ""},
		{base, ""},
		{rootDir, ""},
		{workerDir, ""},
		{filepath.Join(workerDir, "missing", "deeper"), ""},
		{otherDir, otherDir},
		{filepath.Join(otherDir, "sub"), otherDir},
		{filepath.Join(otherDir, "missing"), otherDir},
		{groupW, groupW},
		{otherW, otherW},
		{sticky, ""},
		// Anyone may create a missing name in a sticky directory, after the check: refused.
		{filepath.Join(sticky, "missing"), filepath.Join(sticky, "missing")},
		{filepath.Join(sticky, "missing", "deeper"), filepath.Join(sticky, "missing")},
		{stickyOther, stickyOther},
		{filepath.Join(base, "l-root"), ""},
		{filepath.Join(base, "l-root-to-other", "sub"), otherDir},
		{filepath.Join(base, "l-other"), filepath.Join(base, "l-other")},
		{filepath.Join(base, "l-rel", "x"), ""},
		// ".." is the kernel's: the parent of where a link led, not the link's directory (a lexical
		// clean made "l-other-sub/.." the base, and the kernel went to otherDir).
		{filepath.Join(base, "l-other-sub") + "/..", filepath.Join(base, "l-other-sub")},
		{filepath.Join(base, "l-root-to-other-sub") + "/..", otherDir},
		{filepath.Join(base, "l-rel-dotdot") + "/..", otherDir},
		{workerDir + "/../root/./x", ""},
		{workerDir + "/../other", otherDir},
		{"/../" + rootDir[1:], ""},
	} {
		err := Check(tc.path, worker)
		var u *Untrusted
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("Check(%s) = %v, want nil", tc.path, err)
		case tc.bad != "" && !errors.As(err, &u):
			t.Errorf("Check(%s) = %v, want Untrusted at %s", tc.path, err, tc.bad)
		case tc.bad != "" && (u.Dir != tc.bad || u.UID != worker):
			t.Errorf("Check(%s) refused %s for uid %d, want %s", tc.path, u.Dir, u.UID, tc.bad)
		}
	}
	// The same tree for root as the worker: the worker's own directory is another uid's.
	if err := Check(workerDir, 0); !errors.As(err, new(*Untrusted)) {
		t.Errorf("Check(%s, 0) = %v, want Untrusted", workerDir, err)
	}
	if err := Check("relative", worker); err == nil {
		t.Error("a relative path passed")
	}
	// A loop of links ends with ELOOP, not a hang.
	link("loop-b", "loop-a", 0)
	link("loop-a", "loop-b", 0)
	if err := Check(filepath.Join(base, "loop-a"), worker); err == nil || errors.As(err, new(*Untrusted)) {
		t.Errorf("a loop of links: %v, want an error other than Untrusted", err)
	}
}
