package sidecar

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/cgroup"
	"github.com/hlaunch/hlaunch/internal/testutil"
)

// envPlaceServer makes the test binary the sidecar's end of one connection, in a cgroup namespace of its
// own: it reads where its peer runs (placeOf) and prints the cgroup, or the error and whether it is
// cgroup.ErrOutsideNamespace.
const envPlaceServer = "HLAUNCH_SIDECAR_TEST_PLACE"

func placeServerMain(sock string) int {
	// The namespace is the thread's: every read placeOf makes is on this one.
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		fmt.Println("unshare:", err)
		return 1
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	fmt.Println("listening")
	c, err := ln.Accept()
	if err != nil {
		fmt.Println("accept:", err)
		return 1
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		fmt.Println("conn:", err)
		return 1
	}
	var cred *unix.Ucred
	_ = raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if err != nil {
		fmt.Println("peercred:", err)
		return 1
	}
	pl, err := placeOf(c, cred.Pid)
	fmt.Printf("cgroup=%q outside=%v err=%v\n", pl.cgroup, errors.Is(err, cgroup.ErrOutsideNamespace), err)
	return 0
}

// A sidecar in a cgroup namespace (a container's) reads a peer outside it as "/../x": no cgroup under its
// mount, so it cannot tell whether the peer is a worker, and refuses it. It used to keep the path and look
// "/../x" up under its mount (and path.Clean it into "/x", another cgroup) for the worker marks and scopes.
func TestPeerOutsideCgroupNamespaceIsRefused(t *testing.T) {
	v2 := testutil.RequireCgroup2(t)
	parent := testutil.CgroupParent(t)
	in := filepath.Join(v2, parent, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(shortTempDir(t), "s.sock")
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envPlaceServer+"="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); err != nil || line != "listening\n" {
		t.Fatalf("the server said %q, %v", line, err)
	}
	c, err := net.DialTimeout("unix", sock, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("the server said %q, %v", line, err)
	}
	// This process is in a cgroup outside the server's namespace root (the server's "in").
	if !strings.Contains(line, "outside=true") || !strings.Contains(line, `cgroup=""`) {
		t.Fatalf("a peer outside the sidecar's cgroup namespace: %s; want cgroup.ErrOutsideNamespace", strings.TrimSpace(line))
	}
}
