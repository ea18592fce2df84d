package cgroup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// TestProcCgroup2OutsideNamespace reads cgroups from inside a real cgroup namespace rooted at a subtree the
// test made (T/ns): a process in T/out reads as "/../out", and path.Clean made that "/out", the cgroup
// T/ns/out, which is another one. It must be ErrOutsideNamespace; a process at or under the namespace's root
// keeps its name ("/", "/in").
func TestProcCgroup2OutsideNamespace(t *testing.T) {
	h := testHost(t)
	requireCgroup2(t, h)
	top := testutil.CgroupParent(t)
	dir := func(rel string) *os.File {
		d := filepath.Join(h.Unified, top, rel)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(d)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	nsRoot, out, in := dir("ns"), dir("out"), dir("ns/in")
	// start runs argv in the cgroup open at cg (CLONE_INTO_CGROUP); it is killed at the end.
	start := func(cg *os.File, argv ...string) int {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd.Process.Pid
	}
	// unshare(1) in T/ns makes a cgroup namespace rooted at its own cgroup, T/ns, and execs sleep in it.
	holder := start(nsRoot, "unshare", "--cgroup", "sleep", "300")
	outsider, insider := start(out, "sleep", "300"), start(in, "sleep", "300")
	own, err := os.Readlink("/proc/self/ns/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	nsPath := "/proc/" + strconv.Itoa(holder) + "/ns/cgroup"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if l, err := os.Readlink(nsPath); err == nil && l != own {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("unshare --cgroup made no cgroup namespace")
		}
	}
	type answer struct {
		raw  string
		path string
		err  error
	}
	got := map[string]answer{}
	done := make(chan error, 1)
	go func() {
		// This thread joins the namespace and is never given back: it ends with the goroutine.
		runtime.LockOSThread()
		fd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWCGROUP)
			unix.Close(fd)
		}
		if err != nil {
			done <- err
			return
		}
		for name, pid := range map[string]int{"outsider": outsider, "test": os.Getpid(), "holder": holder, "insider": insider} {
			raw, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
			p, err := ProcCgroup2(pid)
			got[name] = answer{strings.TrimSpace(string(raw)), p, err}
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatalf("join the cgroup namespace: %v", err)
	}
	if a := got["outsider"]; !strings.Contains("\n"+a.raw+"\n", "\n0::/../out\n") {
		t.Fatalf("the process in T/out reads as %q inside the namespace of T/ns, want 0::/../out", a.raw)
	}
	for _, name := range []string{"outsider", "test"} {
		if a := got[name]; !errors.Is(a.err, ErrOutsideNamespace) {
			t.Errorf("%s (%s): ProcCgroup2 = %q, %v; want ErrOutsideNamespace", name, a.raw, a.path, a.err)
		}
	}
	for name, want := range map[string]string{"holder": "/", "insider": "/in"} {
		if a := got[name]; a.err != nil || a.path != want {
			t.Errorf("%s (%s): ProcCgroup2 = %q, %v; want %q", name, a.raw, a.path, a.err, want)
		}
	}
}
