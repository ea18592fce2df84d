package systemd

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	godbus "github.com/godbus/dbus/v5"
)

// dialPipelined opens the bus socket at path and authenticates in one round trip, as sd-bus does: the
// null byte, "AUTH EXTERNAL <uid in hex>" and "BEGIN" go out in one write, and only "OK <guid>" comes back
// (the server checks the uid against the socket's SO_PEERCRED). godbus's own Conn.Auth spends four round
// trips on the same conversation: it asks for the mechanisms, sends EXTERNAL without its data and answers
// the server's DATA, and negotiates descriptor passing, which hlaunch never uses. A launch dials two
// connections and waits for them before its scope can be asked for (make bench: ADR 0003).
//
// godbus has no constructor for an authenticated socket, so the connection it gets is a saslDone: it
// answers godbus's Auth from what the real exchange established and passes everything after BEGIN
// through. The socket is never read before godbus's reader runs, so no message can be lost.
func dialPipelined(ctx context.Context, path string) (*godbus.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	guid, err := authExternal(ctx, c)
	if err != nil {
		c.Close()
		return nil, err
	}
	s := &saslDone{Conn: c, guid: guid}
	conn, err := godbus.NewConn(s)
	if err == nil {
		err = conn.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Geteuid()))})
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("dbus: local authentication: %w", err)
	}
	return conn, nil
}

// authExternal runs the real SASL exchange on c and returns the server's guid.
func authExternal(ctx context.Context, c net.Conn) (string, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
		defer c.SetDeadline(time.Time{}) //nolint:errcheck // cleared for godbus; a broken conn fails there anyway
	}
	uid := hex.EncodeToString([]byte(strconv.Itoa(os.Geteuid())))
	if _, err := c.Write([]byte("\x00AUTH EXTERNAL " + uid + "\r\nBEGIN\r\n")); err != nil {
		return "", fmt.Errorf("dbus: send authentication: %w", err)
	}
	// The server says one line and then waits for our first message: nothing after it is ours to read.
	var line []byte
	buf := make([]byte, 128)
	for !bytes.Contains(line, []byte("\r\n")) {
		n, err := c.Read(buf)
		if err != nil {
			return "", fmt.Errorf("dbus: read authentication reply: %w", err)
		}
		if line = append(line, buf[:n]...); len(line) > 512 {
			return "", errors.New("dbus: authentication protocol error: reply too long")
		}
	}
	if !bytes.HasSuffix(line, []byte("\r\n")) || bytes.Count(line, []byte("\r\n")) != 1 {
		return "", errors.New("dbus: authentication protocol error: more than one reply line")
	}
	guid, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\r\n")), []byte("OK "))
	if !ok || len(guid) == 0 || bytes.ContainsAny(guid, " \r\n") {
		return "", fmt.Errorf("dbus: authentication refused: %q", bytes.TrimSpace(line))
	}
	return string(guid), nil
}

// saslDone is an authenticated bus socket that answers the client side of the SASL conversation locally
// (any EXTERNAL attempt is accepted with the guid the server gave) until the client says BEGIN, and then
// passes bytes through both ways.
type saslDone struct {
	net.Conn
	guid string
	// in reads the socket from BEGIN on, a whole message at a time (godbus panics on a read that fails
	// inside one).
	in *frames

	mu      sync.Mutex
	begun   bool
	pending []byte // what the client wrote of its current line
	replies []byte // local answers not yet read
}

// Write answers each complete SASL line locally; from BEGIN on it writes to the socket.
func (s *saslDone) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.begun {
		s.mu.Unlock()
		return s.Conn.Write(p)
	}
	defer s.mu.Unlock()
	s.pending = append(s.pending, p...)
	for {
		i := bytes.Index(s.pending, []byte("\r\n"))
		if i < 0 {
			return len(p), nil
		}
		line := bytes.TrimLeft(s.pending[:i], "\x00")
		rest := s.pending[i+2:]
		s.pending = nil
		if s.answer(line) {
			s.begun = true
			if len(rest) > 0 {
				if _, err := s.Conn.Write(rest); err != nil {
					return 0, err
				}
			}
			return len(p), nil
		}
		s.pending = rest
	}
}

// answer queues the server's reply to one client line and reports whether the line was BEGIN.
func (s *saslDone) answer(line []byte) bool {
	cmd, arg, _ := bytes.Cut(line, []byte(" "))
	switch string(cmd) {
	case "BEGIN":
		return true
	case "AUTH":
		mech, _, _ := bytes.Cut(arg, []byte(" "))
		if string(mech) == "EXTERNAL" {
			s.reply("OK " + s.guid)
		} else {
			s.reply("REJECTED EXTERNAL")
		}
	case "DATA":
		s.reply("OK " + s.guid)
	case "NEGOTIATE_UNIX_FD":
		s.reply("ERROR descriptor passing is not used")
	default: // CANCEL, ERROR, anything else: start over
		s.reply("REJECTED EXTERNAL")
	}
	return false
}

func (s *saslDone) reply(line string) { s.replies = append(s.replies, line+"\r\n"...) }

// Read returns the local answers while the conversation lasts, then the socket's messages, whole.
func (s *saslDone) Read(p []byte) (int, error) {
	s.mu.Lock()
	if s.begun && len(s.replies) == 0 {
		if s.in == nil {
			s.in = newFrames(s.Conn)
		}
		in := s.in
		s.mu.Unlock()
		return in.Read(p)
	}
	defer s.mu.Unlock()
	if len(s.replies) == 0 {
		return 0, errors.New("dbus: read before the client spoke (local authentication)")
	}
	n := copy(p, s.replies)
	s.replies = s.replies[n:]
	return n, nil
}
