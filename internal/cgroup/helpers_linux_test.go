package cgroup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// helperEnv selects a helper mode when the test binary re-executes itself as a worker.
const helperEnv = "HLAUNCH_CGROUP_HELPER"

// TestHelperProcess is not a test: it is the child side of the re-exec pattern. Modes:
// "cgroup" prints /proc/self/cgroup at once (its first action), "held-cgroup" waits for a line on stdin
// first, "hog" waits for a line then touches memory until killed.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	switch mode {
	case "cgroup":
	case "held-cgroup":
		bufio.NewReader(os.Stdin).ReadString('\n')
	case "hog":
		bufio.NewReader(os.Stdin).ReadString('\n')
		var keep [][]byte
		for i := 0; i < 1024; i++ {
			b := make([]byte, 1<<20)
			for j := range len(b) / 4096 {
				b[j*4096] = 1
			}
			keep = append(keep, b)
		}
		fmt.Println("survived", len(keep))
		os.Exit(3)
	}
	b, _ := os.ReadFile("/proc/self/cgroup")
	os.Stdout.Write(b)
	os.Exit(0)
}

// requireRoot skips a kernel test when not running as root: creating cgroups needs it (testutil).
func requireRoot(t testing.TB) {
	t.Helper()
	testutil.RequireRoot(t, "it creates cgroups")
}

// testHost detects the running host's cgroup layout, skipping when none is mounted.
func testHost(t testing.TB) *Host {
	t.Helper()
	requireRoot(t)
	h, err := Detect()
	if errors.Is(err, ErrNotFound) {
		testutil.Skip(t, "no cgroup hierarchy mounted")
	}
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// requireCgroup2 skips when the host has no cgroup2 tree (a legacy host).
func requireCgroup2(t testing.TB, h *Host) {
	t.Helper()
	if h.Unified == "" {
		testutil.Skip(t, "needs a cgroup2 hierarchy (this host is legacy, v1 only)")
	}
}

// requireV1 skips unless the named v1 controllers have their own hierarchies (a hybrid or legacy host).
func requireV1(t testing.TB, h *Host, ctrls ...string) {
	t.Helper()
	for _, c := range ctrls {
		if h.V1[c] == "" || h.Mode == Unified {
			testutil.Skip(t, fmt.Sprintf("needs a v1 %s hierarchy (host mode %s)", c, h.Mode))
		}
	}
}

func randName(prefix string) string { return testutil.RandName(prefix) }

// testParent returns a fresh parent name and registers a cleanup that kills whatever is left under it in
// every hierarchy of h and removes the directories, failing the test if anything remains.
func testParent(t testing.TB, h *Host) string {
	t.Helper()
	p := randName("hlaunch-test-")
	t.Cleanup(func() {
		for _, r := range roots(h) {
			if err := testutil.RemoveTree(filepath.Join(r, p)); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	return p
}

func roots(h *Host) []string {
	var r []string
	if h.Unified != "" {
		r = append(r, h.Unified)
	}
	seen := map[string]bool{}
	for _, mp := range h.V1 {
		if !seen[mp] && h.Mode != Unified {
			seen[mp] = true
			r = append(r, mp)
		}
	}
	slices.Sort(r)
	return r
}

// selfCmd re-executes the test binary as a helper in mode.
func selfCmd(mode string) *exec.Cmd {
	c := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	c.Env = append(os.Environ(), helperEnv+"="+mode)
	return c
}

// startIn starts c with clone3 CLONE_INTO_CGROUP into g's v2 directory (when it has one), joins the v1
// hierarchies, and returns a function that releases a child waiting on stdin. Without a v2 tree the child
// starts outside and is moved with JoinAll while it waits.
func startIn(t testing.TB, g *Group, c *exec.Cmd) (release func()) {
	t.Helper()
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.SysProcAttr = &syscall.SysProcAttr{}
	var fd *os.File
	if g.v2 != "" {
		if fd, err = g.OpenFD(); err != nil {
			t.Fatal(err)
		}
		defer fd.Close()
		c.SysProcAttr.UseCgroupFD = true
		c.SysProcAttr.CgroupFD = int(fd.Fd())
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
	})
	if fd != nil {
		err = g.Join(c.Process.Pid)
	} else {
		err = g.JoinAll(c.Process.Pid)
	}
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		io.WriteString(stdin, "go\n")
		stdin.Close()
	}
}

// cgroupLines parses /proc/<pid>/cgroup text into hierarchy -> path ("" is the v2 line's key).
func cgroupLines(s string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// waitFor polls cond for up to d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for i := 0; !cond(); i++ {
		if waitCtx(ctx, i) != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// comms returns the command names of pids.
func comms(pids []int) []string {
	var out []string
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		if err == nil {
			out = append(out, strings.TrimSpace(string(b)))
		}
	}
	return out
}

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}
