package systemd

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"
)

// fakeBus listens on a Unix socket in a temporary directory and serves one connection: it answers the
// SASL conversation as dbus-daemon does (EXTERNAL accepted, with or without its initial data; descriptor
// passing agreed), sends the lines it read on lines, then hands the connection past BEGIN to serve (r holds what was read ahead).
func fakeBus(t *testing.T, lines chan<- []string, serve func(io.Reader, net.Conn)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bus")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		var got []string
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				lines <- got
				return
			}
			line = strings.TrimSuffix(strings.TrimPrefix(line, "\x00"), "\r\n")
			got = append(got, line)
			cmd, arg, _ := strings.Cut(line, " ")
			var reply string
			switch {
			case line == "BEGIN":
				lines <- got
				serve(r, c)
				return
			case cmd == "AUTH" && arg == "EXTERNAL":
				reply = "DATA"
			case cmd == "AUTH" && strings.HasPrefix(arg, "EXTERNAL "), cmd == "DATA":
				reply = "OK 0123456789abcdef0123456789abcdef"
			case cmd == "NEGOTIATE_UNIX_FD":
				reply = "AGREE_UNIX_FD"
			default:
				reply = "REJECTED EXTERNAL"
			}
			if _, err := c.Write([]byte(reply + "\r\n")); err != nil {
				lines <- got
				return
			}
		}
	}()
	return "unix:path=" + path
}

// dialFake connects to a fakeBus with dial, as Connect does, and returns the connection and the SASL lines
// the bus read from it.
func dialFake(t *testing.T, serve func(io.Reader, net.Conn)) (*godbus.Conn, []string) {
	t.Helper()
	lines := make(chan []string, 1)
	addr := fakeBus(t, lines, serve)
	ctx := t.Context()
	c, _, err := dial(ctx, addr, false)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	select {
	case got := <-lines:
		return c, got
	case <-time.After(10 * time.Second):
		t.Fatal("the fake bus never saw BEGIN")
		return nil, nil
	}
}

// A connection whose peer goes away in the middle of a message must fail its calls, not crash the
// process. Every launch closes its connection pair while the manager may be broadcasting JobRemoved for
// other launches' jobs, and the sidecar keeps running across all of them. Both of godbus's transports
// panic when a read fails inside a message (the Unix one hands a failed recvmsg's -1 count to a
// bytes.Buffer, the generic one decodes from the socket outside any recover); dial hands godbus whole
// messages only (saslDone reads through frames). The peer's hang-up with the client's call unread is an
// ECONNRESET in the middle of the signal's header; the test binary dies here if that read reaches
// godbus's decoder.
func TestPeerGoneDuringAMessage(t *testing.T) {
	msg := signalMessage(t)
	hlen := int(binary.LittleEndian.Uint32(msg[12:16]))
	if (16+hlen)%8 == 0 {
		t.Fatalf("test message needs padding after its header fields (%d bytes)", hlen)
	}
	called := make(chan struct{})
	c, _ := dialFake(t, func(r io.Reader, c net.Conn) {
		// Wait for the client's call, then send everything up to the padding after the header fields of
		// a signal, and hang up: a decoder reading from the socket is inside the message when it fails.
		if _, err := io.ReadFull(r, make([]byte, 16)); err != nil {
			return
		}
		close(called)
		_, _ = c.Write(msg[:16+hlen])
	})
	call := c.BusObject().Go("org.freedesktop.DBus.Hello", 0, make(chan *godbus.Call, 1))
	select {
	case <-called:
	case <-time.After(10 * time.Second):
		t.Fatal("the fake bus never got the call")
	}
	select {
	case <-call.Done:
		if call.Err == nil {
			t.Fatal("the call succeeded on a connection whose peer hung up")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call never failed after its peer hung up")
	}
	if c.Connected() {
		t.Fatal("the connection still says it is connected after its peer hung up")
	}
}
