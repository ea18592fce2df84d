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
		a := got[name]
		if !errors.Is(a.err, ErrOutsideNamespace) {
			t.Errorf("%s (%s): ProcCgroup2 = %q, %v; want ErrOutsideNamespace", name, a.raw, a.path, a.err)
		}
		// The error carries the path as read, so a caller need not read the file again.
		var oe *OutsideNamespaceError
		if !errors.As(a.err, &oe) || !strings.Contains("\n"+a.raw+"\n", "\n0::"+oe.Path+"\n") || !strings.HasPrefix(oe.Path, "/../") {
			t.Errorf("%s (%s): ProcCgroup2's error %v does not carry the path read", name, a.raw, a.err)
		}
	}
	if oe := (*OutsideNamespaceError)(nil); !errors.As(got["outsider"].err, &oe) || oe.Path != "/../out" {
		t.Errorf("outsider: ProcCgroup2's error %v, want its path /../out", got["outsider"].err)
	}
	for name, want := range map[string]string{"holder": "/", "insider": "/in"} {
		if a := got[name]; a.err != nil || a.path != want {
			t.Errorf("%s (%s): ProcCgroup2 = %q, %v; want %q", name, a.raw, a.path, a.err, want)
		}
	}
}

// A "0::" path that leaves the namespace's root is an *OutsideNamespaceError carrying the path as read
// (never cleaned), errors.Is ErrOutsideNamespace, and worded as before; one inside is cleaned.
func TestOutsideNamespaceError(t *testing.T) {
	for _, raw := range []string{"/../x", "/../../a/b", "/a/../../b", "/.."} {
		p, err := cleanProcCgroup(raw, "/proc/42/cgroup")
		var oe *OutsideNamespaceError
		if p != "" || !errors.As(err, &oe) || !errors.Is(err, ErrOutsideNamespace) {
			t.Fatalf("cleanProcCgroup(%q) = %q, %v; want an *OutsideNamespaceError", raw, p, err)
		}
		if oe.Path != raw || oe.File != "/proc/42/cgroup" {
			t.Errorf("cleanProcCgroup(%q): error carries %+v", raw, *oe)
		}
		if want := `cgroup: cgroup outside this process's cgroup namespace: /proc/42/cgroup names "` + raw + `"`; err.Error() != want {
			t.Errorf("message %q, want %q", err.Error(), want)
		}
	}
	if p, err := cleanProcCgroup("/a//b/./c", "/proc/42/cgroup"); err != nil || p != "/a/b/c" {
		t.Errorf("cleanProcCgroup(/a//b/./c) = %q, %v", p, err)
	}
}
