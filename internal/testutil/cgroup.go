package testutil

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
	"github.com/hlaunch/hlaunch/internal/pidsignal"
)

// RandName is prefix followed by eight random hex digits: a name no other test run on the machine uses.
func RandName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// CgroupParentPrefix starts the name of every CgroupParent: "hlaunch-test-<owner tag>-<hex>".
const CgroupParentPrefix = "hlaunch-test-"

// CgroupParent returns a fresh cgroup parent name, hlaunch-test-<owner tag>-<hex> (OwnedName), relative to
// every hierarchy's root, for a test that has hlaunch (or itself) create cgroups under it. It needs root and
// a cgroup2 hierarchy (RequireCgroup2). Nothing is created; t.Cleanup kills whatever is under the name in
// every hierarchy, removes the directories bottom-up and fails the test when one stays, also when the test
// failed. When the test process is killed instead, the next sweep removes it (SweepStaleCgroups).
func CgroupParent(t testing.TB) string {
	t.Helper()
	RequireCgroup2(t)
	p, err := OwnedName(CgroupParentPrefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := RemoveCgroups(p); err != nil {
			t.Errorf("cleanup of test cgroup parent: %v", err)
		}
	})
	return p
}

// CgroupRoots lists the mount points of every cgroup hierarchy this mount namespace has (each v1
// hierarchy and the v2 one), from /proc/self/mounts.
func CgroupRoots() []string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 || (fs[2] != "cgroup" && fs[2] != "cgroup2") || seen[fs[1]] {
			continue
		}
		seen[fs[1]] = true
		out = append(out, fs[1])
	}
	return out
}

// RemoveCgroups removes the subtree rel (relative to each hierarchy's root, e.g. a CgroupParent name)
// from every hierarchy that has it (RemoveTree). Only ever call it on a name the test made.
func RemoveCgroups(rel string) error {
	if rel == "" || strings.Contains("/"+rel+"/", "/../") {
		return fmt.Errorf("testutil: refusing to remove cgroup subtree %q", rel)
	}
	var errs []error
	for _, root := range CgroupRoots() {
		errs = append(errs, RemoveTree(filepath.Join(root, rel)))
	}
	return errors.Join(errs...)
}

// RemoveTree kills every member of the cgroup directory dir and of every cgroup under it (cgroup.kill
// where the hierarchy has it, else SIGKILL to each listed process after thawing a v1 freezer), and removes
// the directories bottom-up, retrying for up to ten seconds while members are still dying. The subtree is
// walked again on each retry: a cgroup made under dir meanwhile (a shim's exit leaf, made as it ends)
// would keep dir busy for ever if only the first walk were removed. A dir that does not exist is not an error.
func RemoveTree(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Lstat(dir); err != nil {
			return nil
		}
		var dirs []string
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		var last error
		for i := len(dirs) - 1; i >= 0; i-- {
			KillCgroup(dirs[i])
			if err := unix.Rmdir(dirs[i]); err != nil && !errors.Is(err, unix.ENOENT) {
				last = fmt.Errorf("remove test cgroup %s: %w", dirs[i], err)
			}
		}
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return last
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// KillCgroup kills the members of the one cgroup directory d (not of the cgroups under it): cgroup.kill
// where the hierarchy has it, else SIGKILL to each listed process (pinned, internal/pidsignal) after thawing a v1 freezer.
func KillCgroup(d string) {
	_ = os.WriteFile(filepath.Join(d, "cgroup.freeze"), []byte("0"), 0)
	if os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	_ = os.WriteFile(filepath.Join(d, "freezer.state"), []byte("THAWED"), 0)
	// Through internal/pidsignal: a PID read from cgroup.procs is never passed to kill(2).
	list := func() ([]int, error) {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			return nil, err
		}
		pids, err := linux.ParseProcs(b)
		return slices.DeleteFunc(pids, func(pid int) bool { return pid == 1 }), err
	}
	_, _ = pidsignal.Members(list, unix.SIGKILL, map[int]bool{})
}

// CgroupEmpty reports whether the cgroup2 directory dir has no process left in it or under it
// (cgroup.events says "populated 0"); a directory that is gone is empty.
func CgroupEmpty(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	return err != nil || strings.Contains(string(b), "populated 0")
}
