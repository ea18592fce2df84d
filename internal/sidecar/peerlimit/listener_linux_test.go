package peerlimit

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// emfileListener fails its first n Accepts with EMFILE, then hands out one end of a pipe.
type emfileListener struct {
	net.Listener
	n, calls int
}

func (l *emfileListener) Accept() (net.Conn, error) {
	l.calls++
	if l.calls <= l.n {
		return nil, &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept4", unix.EMFILE)}
	}
	c, _ := net.Pipe()
	return c, nil
}

// Out of descriptors, Accept neither returns the error nor spins: it retries when a connection closes (or
// after a short wait), and logs the starvation once, and its end once.
func TestAcceptWaitsOutEMFILE(t *testing.T) {
	var logged []string
	inner := &emfileListener{n: 3}
	l := &Listener{Listener: inner, conns: New("connections", 1, 1), rejects: make(chan struct{}, 1),
		freed: make(chan struct{}, 1), logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}
	l.signalFreed() // a connection closed meanwhile: the first retry does not wait
	start := time.Now()
	c, err := l.Accept()
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	c.Close()
	if inner.calls != 4 {
		t.Errorf("%d accept calls for 3 EMFILEs, want 4", inner.calls)
	}
	if took := time.Since(start); took < 80*time.Millisecond {
		t.Errorf("3 EMFILEs took %s: the retries did not wait", took)
	}
	if len(logged) != 2 || !strings.Contains(logged[0], "too many open files") || !strings.Contains(logged[1], "free again") {
		t.Errorf("log: %q, want one line for the starvation and one for its end", logged)
	}
}

// A peer that resets the connection makes recvmsg fail; Read must still report a count >= 0 (net/http's
// bufio panics on a negative one, which the integration tests once hit).
func TestFdConnReadAfterResetIsNotNegative(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "ours")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	conn := &Conn{UnixConn: c.(*net.UnixConn)}
	defer conn.Close()
	// Our bytes sit unread in the peer's queue when it closes: the kernel resets the connection.
	if _, err := conn.Write([]byte("unread")); err != nil {
		t.Fatal(err)
	}
	unix.Close(fds[1])
	n, err := conn.Read(make([]byte, 16))
	if n < 0 {
		t.Fatalf("Read after a reset returned n = %d (err %v)", n, err)
	}
	if err == nil {
		t.Fatalf("Read after a reset returned no error (n %d)", n)
	}
}
