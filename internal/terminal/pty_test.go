package terminal

import (
	"os"
	"strconv"
	"testing"

	"github.com/hlaunch/hlaunch/internal/worker"
	"golang.org/x/sys/unix"
)

// testPTY opens a pty pair of the test's own: the caller's terminal.
func testPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
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

// Only terminals are replaced by the worker's pty; the caller's window size is copied at once; the master
// is in the runtime's poller (the drain after the worker's exit is bounded by a read deadline); close
// leaves nothing open.
func TestPTYRelayOpen(t *testing.T) {
	cm, cs := testPTY(t)
	if err := unix.IoctlSetWinsize(int(cm.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 77}); err != nil {
		t.Fatal(err)
	}
	pipeR, pipeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pipeR.Close()
	defer pipeW.Close()
	r, got, err := openPTYRelay(worker.Stdio{Stdin: cs, Stdout: pipeW, Stderr: cs})
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	if got.Stdin != r.slave || got.Stderr != r.slave || got.Stdout != pipeW {
		t.Fatalf("stdio %v: want the slave for the terminals and the pipe as it was", got)
	}
	if r.ctty != 0 || r.in != cs || r.out != cs {
		t.Fatalf("ctty %d, in %v, out %v", r.ctty, r.in, r.out)
	}
	ws, err := unix.IoctlGetWinsize(int(r.slave.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Row != 33 || ws.Col != 77 {
		t.Fatalf("the worker's window size %+v (%v), want 33x77", ws, err)
	}
	fl, err := unix.FcntlInt(r.master.Fd(), unix.F_GETFL, 0) // Fd: the check is the last use of master here
	if err != nil || fl&unix.O_NONBLOCK == 0 {
		t.Fatalf("the master is blocking (flags %#x, %v): a read deadline cannot end its drain", fl, err)
	}
	// No terminal at all: no pty.
	none, same, err := openPTYRelay(worker.Stdio{Stdin: pipeR, Stdout: pipeW, Stderr: pipeW})
	if err != nil || none != nil || same.Stdin != pipeR {
		t.Fatalf("pipes only: %v %v %v", none, same, err)
	}
}
