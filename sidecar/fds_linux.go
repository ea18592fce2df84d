package sidecar

import (
	"net"
	"sync"

	"golang.org/x/sys/unix"
)

// maxFDs is how many descriptors one connection may pass (stdin, stdout, stderr); more are closed.
const maxFDs = 3

// fdListener hands out connections that keep the descriptors a client passes with its request
// (SCM_RIGHTS), for a spawn whose spec says "stdio": "inherit".
type fdListener struct{ net.Listener }

// Accept wraps each Unix connection in an fdConn.
func (l fdListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if uc, ok := c.(*net.UnixConn); ok {
		return &fdConn{UnixConn: uc}, nil
	}
	return c, nil
}

// fdConn reads with recvmsg so that descriptors sent along with the request's bytes are kept (Go sets
// MSG_CMSG_CLOEXEC, so none leaks into a child by accident) until a handler takes them or the connection
// closes.
type fdConn struct {
	*net.UnixConn

	mu  sync.Mutex
	fds []int
	oob []byte
}

// Read is net.Conn's Read, keeping any passed descriptors.
func (c *fdConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	if c.oob == nil {
		c.oob = make([]byte, unix.CmsgSpace(4*(maxFDs+1)))
	}
	oob := c.oob
	c.mu.Unlock()
	n, oobn, _, _, err := c.UnixConn.ReadMsgUnix(b, oob)
	if oobn > 0 {
		c.keep(oob[:oobn])
	}
	// ReadMsgUnix passes recvmsg's -1 through on an error (a reset peer), and net/http's bufio panics on a
	// negative count (seen in the integration tests: "http: panic serving ... negative count from Read").
	return max(n, 0), err
}

func (c *fdConn) keep(oob []byte) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range msgs {
		fds, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if len(c.fds) < maxFDs {
				c.fds = append(c.fds, fd)
			} else {
				unix.Close(fd)
			}
		}
	}
}

// takeFDs hands the passed descriptors to the caller, who closes them.
func (c *fdConn) takeFDs() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	fds := c.fds
	c.fds = nil
	return fds
}

// Close closes descriptors nobody took, then the connection.
func (c *fdConn) Close() error {
	for _, fd := range c.takeFDs() {
		unix.Close(fd)
	}
	return c.UnixConn.Close()
}
