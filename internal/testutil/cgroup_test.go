package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// RemoveTree on a real subtree: a member in a nested cgroup is killed and every directory removed.
func TestRemoveTreeKillsAndRemoves(t *testing.T) {
	mount := RequireCgroup2(t)
	parent := RandName("hlaunch-test-")
	top := filepath.Join(mount, parent)
	inner := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = RemoveTree(top) })
	dir, err := os.Open(inner)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	err = cmd.Start()
	dir.Close()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if CgroupEmpty(inner) {
		t.Fatal("the member's cgroup reads as empty")
	}
	if err := RemoveCgroups(parent); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("the member exited 0: it was not killed")
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("member ended with %v, want SIGKILL", err)
	}
	if _, err := os.Lstat(top); !os.IsNotExist(err) {
		t.Fatalf("%s still there: %v", top, err)
	}
	if err := RemoveCgroups("../" + strconv.Itoa(1)); err == nil {
		t.Fatal("a name leaving the hierarchy was accepted")
	}
}

// A temporary hermes root has the profiles asked for, each with its .env, and the root's own for "default".
func TestHermesRoot(t *testing.T) {
	root := HermesRoot(t, map[string]string{"b": "B=1\n", "default": "R=1\n"})
	for p, want := range map[string]string{filepath.Join(root, "profiles", "b", ".env"): "B=1\n", filepath.Join(root, ".env"): "R=1\n"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
}
