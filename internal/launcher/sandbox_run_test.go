package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// sandboxWorld is a cgroup world whose profile b's home belongs to nobody (a root launcher's sandboxed
// worker runs as the home's owner), with the directories down to the hermes root searchable.
func sandboxWorld(t *testing.T) *world {
	t.Helper()
	w := newWorld(t, worker.ScopeCgroup, nil)
	for d := filepath.Dir(w.root); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(w.root, "profiles", "b")
	for _, p := range []string{home, filepath.Join(home, ".env")} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// A sandboxed worker runs as the home's owner, in its own pid namespace, starts in its home, and does
// not see the launcher's state directory; a home owned by root is refused before anything starts.
func TestRunSandboxed(t *testing.T) {
	w := sandboxWorld(t)
	s := spec(`id -u; readlink /proc/self/ns/pid; pwd; ls ` + w.state + ` 2>&1 | head -1; cat .env | head -1`)
	s.Sandbox = true
	code, out, err := w.run(s, launcher.Signals{})
	if err != nil || code != 0 {
		t.Fatalf("sandboxed run: code %d, %v\n%s\nstderr: %s", code, err, out, w.stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 5 {
		t.Fatalf("output %q", out)
	}
	home := filepath.Join(w.root, "profiles", "b")
	if lines[0] != "65534" || lines[2] != home || lines[4] != "B_MARKER=b" {
		t.Errorf("uid %s, cwd %s, .env %q: want 65534 in %s reading B's .env", lines[0], lines[2], lines[4], home)
	}
	// The pid namespace itself, not a small PID: the stub's own runtime may fork helpers first.
	if own, err := os.Readlink("/proc/self/ns/pid"); err != nil || lines[1] == own || !strings.HasPrefix(lines[1], "pid:[") {
		t.Errorf("the worker's pid namespace is %q (the test's: %q, %v): not one of its own", lines[1], own, err)
	}
	if !strings.Contains(lines[3], "No such file") && !strings.Contains(lines[3], "Permission denied") && lines[3] != "" {
		t.Errorf("the state directory is visible in the sandbox: %q", lines[3])
	}
	a := worker.Spec{Profile: "a", Argv: []string{"true"}, Sandbox: true}
	if code, _, err := w.run(a, launcher.Signals{}); code != 125 || !errors.Is(err, worker.ErrInvalid) || !strings.Contains(err.Error(), "owned by root") {
		t.Errorf("a root-owned home: code %d, %v", code, err)
	}
	if left := w.workerCgroups(); len(left) != 0 {
		t.Errorf("cgroups left: %v", left)
	}
}

// A sandboxed worker on a terminal runs behind a pty of its own: it sees a terminal, but not the
// caller's, and its output reaches the caller's terminal through the relay.
func TestRunSandboxedOnTerminal(t *testing.T) {
	w := sandboxWorld(t)
	m, sl := openPTY(t)
	s := spec(`test -t 0 && echo tty-yes; echo "dev=$(stat -L -c %t:%T /proc/self/fd/0)"; echo end`)
	s.Sandbox = true
	code, err := w.l.Run(context.Background(), s, worker.Stdio{Stdin: sl, Stdout: sl, Stderr: sl}, launcher.Signals{})
	if err != nil || code != 0 {
		t.Fatalf("code %d, %v\nstderr: %s", code, err, w.stderr.String())
	}
	_ = m.SetReadDeadline(time.Now().Add(30 * time.Second))
	var got []byte
	buf := make([]byte, 256)
	for !strings.Contains(string(got), "end") {
		n, err := m.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(sl.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	caller := fmt.Sprintf("dev=%x:%x", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	out := string(got)
	if !strings.Contains(out, "tty-yes") || !strings.Contains(out, "dev=") {
		t.Fatalf("through the relay: %q", out)
	}
	t.Logf("relayed %q; the caller's terminal is %s", out, caller)
	if strings.Contains(out, caller+"\r") {
		t.Errorf("the worker's terminal is the caller's (%s): %q", caller, out)
	}
}

// openPTY opens a pty pair of the test's own: the caller's terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := os.NewFile(uintptr(fd), "ptmx")
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}
