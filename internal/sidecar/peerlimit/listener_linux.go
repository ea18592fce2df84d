package peerlimit

import (
	"errors"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/sidecar/access"
)

// maxFDs is how many descriptors one connection may pass (stdin, stdout, stderr); more are closed.
const maxFDs = 3

// rejectSlots is how many connections over a limit may be answered (429 or 503) at once; rejectRead is how
// long one may take to send its headers. Further ones are closed unanswered.
const (
	rejectSlots = 64
	rejectRead  = 2 * time.Second
)

// Listener hands out connections that keep the descriptors a client passes with its request
// (SCM_RIGHTS), for a spawn whose spec says "stdio": "inherit", until that request ends (DropFDs). With conns set it also counts each
// connection against its peer uid's share (Limiter): a connection over a limit is handed out marked, to be
// answered 429 or 503 and closed, and bounded by rejects and rejectRead while it is.
type Listener struct {
	net.Listener
	conns *Limiter
	// rejects holds one token per over-limit connection being answered; when it is full, further ones are
	// closed at once, unanswered.
	rejects chan struct{}
	// rejectRead is how long an over-limit connection may take to send its request's headers.
	rejectRead time.Duration
	// freed is signalled (without blocking) whenever a connection closes: Accept waits on it when the
	// process is out of descriptors.
	freed chan struct{}
	logf  func(string, ...any)
	// limited is told of each connection refused at a bound (the sidecar's metrics); starved is whether the
	// last Accept failed for want of descriptors (logged once each time it starts).
	limited func(label string, uid uint32)
	starved bool
}

// NewListener counts the connections ln accepts in conns; logf tells the operator of a shortage of
// descriptors, and limited of each connection refused at a bound (by the bound's Label, or "unanswered").
func NewListener(ln net.Listener, conns *Limiter, logf func(string, ...any), limited func(label string, uid uint32)) *Listener {
	return &Listener{Listener: ln, conns: conns, rejects: make(chan struct{}, rejectSlots), rejectRead: rejectRead,
		freed: make(chan struct{}, 1), logf: logf, limited: limited}
}

// Accept wraps each Unix connection in a Conn. Out of descriptors (EMFILE, ENFILE), it neither returns
// the error (net/http would back off for up to a second per try) nor retries at once (the pending connection
// would make it spin): it waits until a connection closes, or a short while.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if l.conns != nil && (errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE)) {
				if !l.starved {
					l.logf("sidecar: accept: %v: waiting for connections to close", err)
				}
				l.starved = true
				select {
				case <-l.freed:
				case <-time.After(50 * time.Millisecond):
				}
				continue
			}
			return nil, err
		}
		if l.starved {
			l.starved = false
			l.logf("sidecar: accept: descriptors free again")
		}
		uc, ok := c.(*net.UnixConn)
		if !ok {
			return c, nil
		}
		fc := &Conn{UnixConn: uc}
		fc.peer, fc.credErr = access.PeerOf(uc)
		if l.conns == nil {
			return fc, nil
		}
		uid := fc.peer.UID
		if fc.credErr != nil {
			uid = UnknownUID
		}
		release, err := l.conns.Acquire(uid)
		if err == nil {
			fc.release = func() { release(); l.signalFreed() }
			return fc, nil
		}
		select {
		case l.rejects <- struct{}{}:
			l.limited(l.conns.Label(err), uid)
		default:
			l.limited("unanswered", uid)
			uc.Close() // already answering as many refusals as it may: this one is not answered
			continue
		}
		fc.over = err
		fc.readCap = time.Now().Add(l.rejectRead)
		fc.release = func() { <-l.rejects }
		_ = fc.SetReadDeadline(fc.readCap)
		return fc, nil
	}
}

func (l *Listener) signalFreed() {
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// Conn reads with recvmsg so that descriptors sent along with the request's bytes are kept (Go sets
// MSG_CMSG_CLOEXEC, so none leaks into a child by accident) until a handler takes them, the request they
// came with ends (DropFDs), or the connection closes. A client sends the next request on a connection
// only after the answer to the last one, so what arrives while one request is read or served is that
// request's.
type Conn struct {
	*net.UnixConn

	// peer is the kernel's record of who connected (access.PeerOf), read once at accept; credErr when it failed.
	peer    access.Peer
	credErr error
	// over is the limit this connection is over (ErrTooMany, ErrBusy), nil when it is served; readCap is
	// the latest read deadline such a connection may have, whatever net/http asks for.
	over    error
	readCap time.Time
	release func() // gives back the connection's slot (or refusal token); nil when none was taken

	mu     sync.Mutex
	fds    []int
	oob    []byte
	closed bool
}

// Peer is who connected, as the kernel recorded it at accept (access.PeerOf), or why it could not be read.
func (c *Conn) Peer() (access.Peer, error) { return c.peer, c.credErr }

// Over is the limit the connection is over (ErrTooMany, ErrBusy), to be answered on its first request and
// closed; nil when it is served.
func (c *Conn) Over() error { return c.over }

// Read is net.Conn's Read, keeping any passed descriptors.
func (c *Conn) Read(b []byte) (int, error) {
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

func (c *Conn) keep(oob []byte) {
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

// TakeFDs hands the passed descriptors to the caller, who closes them.
func (c *Conn) TakeFDs() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	fds := c.fds
	c.fds = nil
	return fds
}

// SetReadDeadline is net.Conn's, never later than readCap when that is set.
func (c *Conn) SetReadDeadline(t time.Time) error {
	if !c.readCap.IsZero() && (t.IsZero() || t.After(c.readCap)) {
		t = c.readCap
	}
	return c.UnixConn.SetReadDeadline(t)
}

// SetDeadline is net.Conn's, with the read side capped as SetReadDeadline caps it.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.UnixConn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// DropFDs closes the passed descriptors nobody took: at the end of the request they came with, so that a
// later request on the same connection, which passed none, cannot be given them.
func (c *Conn) DropFDs() {
	for _, fd := range c.TakeFDs() {
		unix.Close(fd)
	}
}

// Close closes descriptors nobody took, then the connection, and gives back its slot.
func (c *Conn) Close() error {
	c.DropFDs()
	err := c.UnixConn.Close()
	c.mu.Lock()
	first := !c.closed
	c.closed = true
	c.mu.Unlock()
	if first && c.release != nil {
		c.release()
	}
	return err
}
