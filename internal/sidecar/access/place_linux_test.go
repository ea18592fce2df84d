package access

import (
	"bufio"
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

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// envPlaceServer makes the test binary the sidecar's end of one connection, in a cgroup namespace of its
// own: it reads where its peer runs (PlaceOf) and prints the cgroup, the path outside, and the error.
const envPlaceServer = "HLAUNCH_SIDECAR_TEST_PLACE"

// TestMain lets the test binary stand in for the sidecar's end of a connection (see
// TestPeerOutsideCgroupNamespace).
func TestMain(m *testing.M) {
	if sock := os.Getenv(envPlaceServer); sock != "" {
		os.Exit(placeServerMain(sock))
	}
	os.Exit(testutil.RunWithLeakCheck(m))
}

func placeServerMain(sock string) int {
	// The namespace is the thread's: every read PlaceOf makes is on this one.
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
	pl, err := PlaceOf(c, cred.Pid)
	fmt.Printf("cgroup=%q outside=%q err=%v\n", pl.Cgroup, pl.Outside, err)
	return 0
}

// A sidecar in a cgroup namespace (a container's, a test manager's world) reads a peer outside it as
// "/../x": a path that names nothing under its mount. It is kept apart, never looked up for worker marks
// nor path.Clean'd into "/x", another cgroup, for scopes; such a peer is served unless a component of the
// path is a scope named as hlaunch names its scopes.
func TestPeerOutsideCgroupNamespace(t *testing.T) {
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
	// t.TempDir() paths can exceed the 108-byte sun_path limit once the test name is long.
	tmp, err := os.MkdirTemp("", "hls-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	sock := filepath.Join(tmp, "s.sock")
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
	if !strings.Contains(line, `cgroup="" outside="/..`) || !strings.HasSuffix(line, "err=<nil>\n") {
		t.Fatalf("a peer outside the sidecar's cgroup namespace: %s; want no cgroup, the path outside kept apart, no error", strings.TrimSpace(line))
	}
}
