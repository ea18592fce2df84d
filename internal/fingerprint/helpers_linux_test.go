package fingerprint

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// requireRoot skips a kernel test when it cannot create cgroups (testutil).
func requireRoot(t testing.TB) {
	t.Helper()
	testutil.RequireRoot(t, "it creates cgroups and pidfds of other processes")
}

// requireCgroup2 returns the mount point of the cgroup2 hierarchy (testutil.RequireCgroup2).
func requireCgroup2(t testing.TB) string {
	t.Helper()
	return testutil.RequireCgroup2(t)
}

// testTree is a cgroup subtree this test created, hlaunch-test-<rand>, removed in t.Cleanup after its
// members are killed.
type testTree struct {
	t     testing.TB
	mount string
	rel   string
}

func newTree(t testing.TB) *testTree {
	t.Helper()
	mount := requireCgroup2(t)
	tr := &testTree{t: t, mount: mount, rel: "/" + testutil.RandName("hlaunch-test-")}
	if err := os.Mkdir(tr.path(tr.rel), 0o755); err != nil {
		t.Fatalf("create test cgroup: %v", err)
	}
	t.Cleanup(tr.remove)
	return tr
}

func (tr *testTree) path(rel string) string { return filepath.Join(tr.mount, rel) }

func (tr *testTree) src() Sources { return Sources{CgroupRoot: tr.mount} }

// mkdir creates a cgroup under the tree and returns its path relative to the mount.
func (tr *testTree) mkdir(name string) string {
	rel := tr.rel + "/" + name
	if err := os.Mkdir(tr.path(rel), 0o755); err != nil {
		tr.t.Fatalf("mkdir cgroup: %v", err)
	}
	return rel
}

// kill empties a cgroup of the tree with cgroup.kill and waits until it is empty.
func (tr *testTree) kill(rel string) {
	_ = os.WriteFile(tr.path(rel)+"/cgroup.kill", []byte("1"), 0)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(tr.path(rel) + "/cgroup.events")
		if err != nil || strings.Contains(string(b), "populated 0") {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	tr.t.Errorf("cgroup %s did not empty after cgroup.kill", rel)
}

// remove kills every member of the tree and removes its directories bottom-up.
func (tr *testTree) remove() {
	if err := testutil.RemoveTree(tr.path(tr.rel)); err != nil {
		tr.t.Errorf("remove test cgroup: %v", err)
	}
}

// proc is a process the test started; done receives its Wait result once.
type proc struct {
	cmd  *exec.Cmd
	pid  int
	done chan error
}

// start runs argv with CLONE_INTO_CGROUP into rel.
func (tr *testTree) start(rel string, argv ...string) *proc {
	tr.t.Helper()
	dir, err := os.Open(tr.path(rel))
	if err != nil {
		tr.t.Fatal(err)
	}
	defer dir.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	if err := cmd.Start(); err != nil {
		tr.t.Fatalf("start %v: %v", argv, err)
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	tr.t.Cleanup(func() {
		tr.kill(rel)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			tr.t.Errorf("pid %d not reaped", p.pid)
		}
	})
	return p
}

// requireAlive fails the test if p has exited, is stopped, or has a signal pending: proof that a refusal sent
// nothing. It does not wait: kill(2) queues a signal before it returns, and a fatal signal stays visible in
// the pending sets (SIGKILL in SigPnd, the signal itself in ShdPnd) until the process is reaped, even while
// it is killing the process. So a fatal signal sent before the call is seen now, however slow the host. A
// stop signal is seen as pending, or once the process has stopped; one whose default action is to be
// ignored leaves no trace. The targets are sleeps, for which the signals the refused calls would send
// (SIGTERM, SIGKILL) are fatal.
func (p *proc) requireAlive(t testing.TB) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/status")
	if err != nil {
		t.Fatalf("pid %d must still be alive: %v", p.pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if (k == "SigPnd" || k == "ShdPnd") && strings.Trim(v, "0") != "" {
			t.Fatalf("pid %d has a pending signal: %s", p.pid, line)
		}
		if k == "State" && strings.ContainsAny(v[:1], "TtZX") {
			t.Fatalf("pid %d is stopped or has exited: %s", p.pid, line)
		}
	}
	select {
	case err := <-p.done: // reaped after the read above
		p.done <- err
		t.Fatalf("pid %d exited (%v) but must still be alive", p.pid, err)
	default:
	}
}

// requireKilledBy waits for p to exit and requires it was killed by sig.
func (p *proc) requireKilledBy(t testing.TB, sig syscall.Signal) {
	t.Helper()
	var err error
	select {
	case err = <-p.done:
		p.done <- err
	case <-time.After(10 * time.Second):
		t.Fatalf("pid %d did not exit", p.pid)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("pid %d: Wait = %v, want killed by %v", p.pid, err, sig)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != sig {
		t.Fatalf("pid %d: exit status %v, want killed by %v", p.pid, ws, sig)
	}
}

// waitProcs waits until the cgroup lists at least n processes.
func (tr *testTree) waitProcs(rel string, n int) []int {
	tr.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(tr.path(rel) + "/cgroup.procs")
		f := strings.Fields(string(b))
		if len(f) >= n {
			var pids []int
			for _, s := range f {
				p, _ := strconv.Atoi(s)
				pids = append(pids, p)
			}
			return pids
		}
		if time.Now().After(deadline) {
			tr.t.Fatalf("cgroup %s has %d processes, want %d", rel, len(f), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func fixed(s string) func() (string, error) { return func() (string, error) { return s, nil } }
