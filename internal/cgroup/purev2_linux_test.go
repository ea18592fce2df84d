package cgroup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// pureV2Env marks the re-executed test binary running inside the private cgroup + mount namespace.
const pureV2Env = "HLAUNCH_CGROUP_PUREV2_CHILD"

// TestPureV2 runs the create/place/kill suite against a real, pure cgroup v2 tree. The outer test makes a
// subtree in this host's cgroup2 hierarchy, starts `unshare --cgroup --mount --propagation private` inside
// it (clone3 into the subtree, so the new cgroup namespace is rooted there) and re-executes this test; the
// inner run mounts a fresh cgroup2 on a temporary directory, which shows only that subtree, and tests a
// Host{Mode: Unified} built on it. The mount disappears with the namespace; the outer test removes the
// subtree.
func TestPureV2(t *testing.T) {
	if os.Getenv(pureV2Env) == "1" {
		pureV2Inner(t)
		return
	}
	h := testHost(t)
	requireCgroup2(t, h)
	if h.Mode == Unified {
		// On a pure v2 host the host suite already is the pure v2 suite.
		t.Skip("host is already pure cgroup v2; TestHostSuite covers it")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare(1) from util-linux")
	}
	top := randName("hlaunch-test-")
	t.Cleanup(func() {
		if err := testutil.RemoveTree(filepath.Join(h.Unified, top)); err != nil {
			t.Error(err)
		}
	})
	ns := filepath.Join(h.Unified, top, "ns")
	if err := os.MkdirAll(ns, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(ns, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	args := []string{"--cgroup", "--mount", "--propagation", "private", os.Args[0],
		"-test.run=^TestPureV2$", "-test.count=1", "-test.v", "-test.timeout=60s"}
	c := exec.Command(unshare, args...)
	c.Env = append(os.Environ(), pureV2Env+"=1")
	c.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	out, err := c.CombinedOutput()
	t.Logf("inner run:\n%s", out)
	if err != nil {
		t.Fatalf("inner pure v2 run failed: %v", err)
	}
	if strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), "--- PASS: TestPureV2") {
		t.Fatal("inner pure v2 run skipped or did not pass")
	}
}

func pureV2Inner(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("cgroup2", dir, "cgroup2", 0, ""); err != nil {
		t.Fatalf("mount cgroup2: %v", os.NewSyscallError("mount", err))
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	// A fresh mount in a cgroup namespace is rooted at the namespace's cgroup: not the real root, so
	// cgroup.events exists at its top (it does not at a real root).
	if _, err := os.Stat(filepath.Join(dir, "cgroup.events")); err != nil {
		t.Fatalf("mounted tree is not a namespaced subtree: %v", err)
	}
	h := &Host{Mode: Unified, Unified: dir}

	t.Run("placement", func(t *testing.T) { checkPlacement(t, h, Limits{}, nil) })
	t.Run("kill-tree", func(t *testing.T) { checkKillTree(t, h, Limits{}) })
	t.Run("signal", func(t *testing.T) { checkSignal(t, h, Limits{}) })
	t.Run("refusals", func(t *testing.T) { checkRefusals(t, h) })
	t.Run("unsupported-limits", func(t *testing.T) {
		avail, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		parent := testParent(t, h)
		for _, tc := range []struct {
			ctrl string
			lim  Limits
			name string
		}{
			{"memory", Limits{Memory: 64 << 20}, "memory"},
			{"memory", Limits{MemoryHigh: 64 << 20}, "memory-high"},
			{"pids", Limits{Pids: 10}, "pids"},
			{"cpu", Limits{CPUs: 1}, "cpus"},
		} {
			if strings.Contains(string(avail), tc.ctrl) {
				t.Logf("%s is available in this tree; not an unsupported case", tc.ctrl)
				continue
			}
			g, err := h.Create(parent, "w", tc.lim)
			if !errors.Is(err, ErrUnsupportedLimit) || g != nil || !strings.Contains(err.Error(), tc.name) {
				t.Errorf("Create(%+v) = %v, %v; want ErrUnsupportedLimit naming %q", tc.lim, g, err, tc.name)
			}
			if _, err := os.Lstat(filepath.Join(dir, parent)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("refused Create(%+v) left %s behind", tc.lim, parent)
			}
		}
	})
}
