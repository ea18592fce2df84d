package systemdtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartAndTeardown checks the manager's view (its own subtree as root), a client's placement, and
// that teardown leaves nothing behind.
func TestStartAndTeardown(t *testing.T) {
	var m *Manager
	t.Run("run", func(t *testing.T) {
		m = Start(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := m.Command(ctx, "cat", "/proc/self/cgroup").Output()
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		// Inside the manager's cgroup namespace the client is in /clients, not in a host path.
		if !strings.Contains(string(out), "0::/clients\n") {
			t.Errorf("client cgroup = %q, want 0::/clients", out)
		}
		mgr, err := os.ReadFile("/proc/" + itoa(m.PID) + "/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		if want := "0::/" + filepath.Base(m.CgroupV2) + "/init.scope\n"; !strings.Contains(string(mgr), want) {
			t.Errorf("manager cgroup (host view) = %q, want init.scope inside %s", mgr, m.CgroupV2)
		}
		if _, err := os.Stat(m.CgroupV2 + "/init.scope"); err != nil {
			t.Errorf("manager did not create init.scope in its subtree: %v", err)
		}
	})
	if m == nil {
		return
	}
	for _, p := range append(m.subtrees(), m.base) {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("left behind after teardown: %s (%v)", p, err)
		}
	}
	if err := syscallKill0(m.PID); err == nil {
		t.Errorf("manager %d still alive after teardown", m.PID)
	}
}

// TestUserManager runs the manager as an unprivileged user (nobody) with a delegated subtree: the case
// of a worker launched by a non-root gateway with that user's own manager.
func TestUserManager(t *testing.T) {
	m := StartWith(t, Options{UID: 65534, GID: 65534})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hung client only: under TCG this takes seconds
	defer cancel()
	st, err := os.ReadFile("/proc/" + itoa(m.PID) + "/status")
	if err != nil || !strings.Contains(string(st), "\nUid:\t65534\t65534\t65534\t65534\n") {
		t.Errorf("manager is not running as 65534: %v\n%s", err, st)
	}
	out, err := m.Command(ctx, "sh", "-c", `id -u; systemd-run --user --scope --quiet --unit probe cat /proc/self/cgroup`).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "65534\n") || !strings.Contains(string(out), "0::/app.slice/probe.scope\n") {
		t.Errorf("client as the user: %v\n%s\n--- manager log:\n%s", err, out, m.Log())
	}
}

// TestRefusesHostRoot runs the inner script in a private mount namespace but WITHOUT a cgroup namespace,
// so its fresh cgroup mounts are the host's roots: it must refuse before exec'ing the manager. /bin/echo
// stands in for systemd, so a broken check prints "--user" instead of taking over the host.
func TestRefusesHostRoot(t *testing.T) {
	requireCapabilities(t)
	for _, layout := range []string{"hybrid", "unified"} {
		t.Run(layout, func(t *testing.T) {
			dir := t.TempDir()
			out, err := exec.Command("unshare", "--mount", "--propagation", "private", "/bin/sh", "-euc", innerScript,
				"systemdtest-inner", layout, dir, dir, "0", "0", "/bin/echo").CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 97 || !strings.Contains(string(out), "REFUSING") ||
				strings.Contains(string(out), "--user") {
				t.Fatalf("inner script at the host's root: %v\n%s", err, out)
			}
			t.Logf("%s", out)
		})
	}
}
