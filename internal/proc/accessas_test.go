package proc

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// A root launcher's lookup for a worker that drops to another uid passes over a directory of the PATH
// only root may search, and a file only root may run, and finds the next the worker may run; root's own
// lookup (LookPath) stops at the first. Every thread's filesystem ids and groups are root's again after.
func TestLookPathAsTheWorker(t *testing.T) {
	testutil.RequireRoot(t, "switching a thread's filesystem ids needs CAP_SETUID")
	top := t.TempDir()
	for _, d := range []string{filepath.Dir(top), top} { // t.TempDir's are root's alone
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	priv, pub, mine := filepath.Join(top, "priv"), filepath.Join(top, "pub"), filepath.Join(top, "mine")
	for dir, mode := range map[string]os.FileMode{priv: 0o700, pub: 0o755, mine: 0o755} {
		if err := os.Mkdir(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(priv, "tool"), 0o755)
	write(filepath.Join(mine, "tool"), 0o744) // root may run it; others may not
	write(filepath.Join(pub, "tool"), 0o755)
	write(filepath.Join(priv, "only"), 0o755)
	path := priv + ":" + mine + ":" + pub
	worker := &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}

	if got, err := LookPath("tool", path); err != nil || got != filepath.Join(priv, "tool") {
		t.Errorf("root's own lookup: %q %v; want the first, %s", got, err, filepath.Join(priv, "tool"))
	}
	if got, err := LookPathAs("tool", path, worker); err != nil || got != filepath.Join(pub, "tool") {
		t.Errorf("the worker's lookup: %q %v; want the one it may run, %s", got, err, filepath.Join(pub, "tool"))
	}
	if _, err := LookPathAs("only", path, worker); ExitCodeFor(err) != 126 {
		t.Errorf("a name only in a directory the worker cannot search: %v (code %d); want 126", err, ExitCodeFor(err))
	}
	if _, err := LookPathAs(filepath.Join(mine, "tool"), "", worker); ExitCodeFor(err) != 126 {
		t.Errorf("a path the worker may not run: %v; want 126", err)
	}
	// In the worker's group, the file its group may run is found.
	write(filepath.Join(mine, "grp"), 0o750)
	if err := os.Chown(filepath.Join(mine, "grp"), 0, 4242); err != nil {
		t.Fatal(err)
	}
	if got, err := LookPathAs("grp", path, &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{4242}}); err != nil || got != filepath.Join(mine, "grp") {
		t.Errorf("a file the worker's supplementary group may run: %q %v", got, err)
	}
	if _, err := LookPathAs("grp", path, worker); err == nil {
		t.Error("a file only group 4242 may run was found for a worker without that group")
	}
	if got, err := LookPathAs("tool", path, &syscall.Credential{Uid: 0, Gid: 0}); err != nil || got != filepath.Join(priv, "tool") {
		t.Errorf("a cred of our own uid: %q %v; want root's lookup", got, err)
	}
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	for _, st := range tasks {
		b, err := os.ReadFile(st)
		if err != nil {
			continue // a thread that ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) == 5 && (f[0] == "Uid:" || f[0] == "Gid:") && f[4] != "0":
				t.Errorf("%s: %s; want every thread's filesystem id root's again", st, line)
			case len(f) > 0 && f[0] == "Groups:" && len(f) > 1 && strings.Contains(line, "4242"):
				t.Errorf("%s: %s; want the worker's groups gone", st, line)
			}
		}
	}
}
