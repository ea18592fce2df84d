package sidecar

import (
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

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
	conn := &fdConn{UnixConn: c.(*net.UnixConn)}
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
