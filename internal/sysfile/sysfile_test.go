package sysfile

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// pollerChildEnv makes the test binary read files through this package and report whether the runtime
// poller was started (an eventpoll descriptor exists); it must not have been.
const pollerChildEnv = "HLAUNCH_TEST_SYSFILE_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(pollerChildEnv); dir != "" {
		os.Exit(pollerChild(dir))
	}
	os.Exit(m.Run())
}

func pollerChild(dir string) int {
	if _, err := ReadFile("/proc/self/mountinfo"); err != nil {
		return 2
	}
	f, err := Open(filepath.Join(dir, "fifo"), unix.O_NONBLOCK)
	if err != nil {
		return 2
	}
	buf := make([]byte, 1)
	_, _ = f.Read(buf)
	_ = f.Close()
	// Readlink, not os.ReadDir: os.Open would start the poller itself.
	for fd := 0; fd < 256; fd++ {
		if l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil && strings.Contains(l, "eventpoll") {
			return 1
		}
	}
	return 0
}

func TestNoRuntimePoller(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), pollerChildEnv+"="+dir)
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		t.Fatal("reading through sysfile started the runtime's poller (an eventpoll descriptor exists)")
	default:
		t.Fatalf("child: %v", err)
	}
}

func TestReadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	want := strings.Repeat("0123456789", 1000) // more than one read
	if err := os.WriteFile(p, []byte(want), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(p)
	if err != nil || string(got) != want {
		t.Fatalf("ReadFile = %d bytes, %v; want %d bytes", len(got), err, len(want))
	}
	if b, err := ReadFile("/proc/self/mountinfo"); err != nil || len(b) == 0 {
		t.Fatalf("ReadFile(/proc/self/mountinfo) = %d bytes, %v", len(b), err)
	}
	_, err = ReadFile(filepath.Join(t.TempDir(), "missing"))
	var pe *os.PathError
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: err %v, want a *os.PathError wrapping fs.ErrNotExist", err)
	}
}

// O_NONBLOCK only keeps the open from blocking; the file returned is blocking again.
func TestOpenClearsNonblock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p, unix.O_NONBLOCK) // would block forever without O_NONBLOCK (no writer)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_NONBLOCK != 0 {
		t.Fatal("O_NONBLOCK still set on the returned file")
	}
	fd, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
	if err != nil || fd&unix.FD_CLOEXEC == 0 {
		t.Fatalf("FD_CLOEXEC not set (flags %#x, %v)", fd, err)
	}
}
