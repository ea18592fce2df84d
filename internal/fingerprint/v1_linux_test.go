package fingerprint

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// TestKernelV1Hierarchy runs a worker in a cgroup of a v1 hierarchy (legacy hosts): no cgroup.events, no
// cgroup.kill, no cgroup.freeze. Membership, populated and the whole-tree signal must still work.
func TestKernelV1Hierarchy(t *testing.T) {
	requireRoot(t)
	const mount = "/sys/fs/cgroup/pids"
	var st unix.Statfs_t
	if unix.Statfs(mount, &st) != nil || st.Type != unix.CGROUP_SUPER_MAGIC {
		testutil.Skip(t, "no v1 pids hierarchy at "+mount+" (a pure cgroup2 host)")
	}
	top := "/" + testutil.RandName("hlaunch-test-")
	rel := top + "/w"
	for _, d := range []string{top, rel} {
		if err := os.Mkdir(mount+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		// Our subtree holds only processes this test placed there: killed by PID, then removed.
		if err := testutil.RemoveTree(mount + top); err != nil {
			t.Errorf("remove v1 test cgroup: %v", err)
		}
	})

	// The leader waits on stdin until it has been moved into the v1 cgroup, then double-forks.
	cmd := exec.Command("sh", "-c", `read x; setsid sh -c 'sleep 1000 & sleep 1000 &' ; exec sleep 1000`)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.done })
	if err := os.WriteFile(mount+rel+"/cgroup.procs", []byte(strconv.Itoa(p.pid)), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(mount + rel + "/cgroup.procs")
		sleeps := 0
		for _, s := range strings.Fields(string(b)) {
			if c, _ := os.ReadFile("/proc/" + s + "/comm"); strings.TrimSpace(string(c)) == "sleep" {
				sleeps++
			}
		}
		if sleeps == 3 && len(strings.Fields(string(b))) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tree did not settle: %q", b)
		}
		time.Sleep(5 * time.Millisecond)
	}

	src := Sources{CgroupRoot: mount}
	id := mustCapture(t, src, p.pid, rel)
	requireVerdict(t, src, id, Running)
	h, _, err := Authorize(src, id)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if pop, err := h.Populated(); err != nil || !pop {
		t.Fatalf("Populated = %v, %v", pop, err)
	}
	ctx := ctxT(t, 10*time.Second)
	if err := h.SignalAll(ctx, syscall.SIGKILL); err != nil {
		t.Fatalf("SignalAll on v1: %v", err)
	}
	if err := h.WaitEmpty(ctx); err != nil {
		t.Fatalf("WaitEmpty on v1: %v", err)
	}
	p.requireKilledBy(t, syscall.SIGKILL)
	if pop, err := h.Populated(); err != nil || pop {
		t.Fatalf("Populated after kill = %v, %v", pop, err)
	}
	requireVerdict(t, src, id, Exited)
}
