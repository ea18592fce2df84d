package systemd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"
)

// fakeServer reads what the client sends up to and including BEGIN from c and answers with reply.
func fakeServer(t *testing.T, c net.Conn, reply string) <-chan string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		r := bufio.NewReader(c)
		var b strings.Builder
		for !strings.HasSuffix(b.String(), "BEGIN\r\n") {
			line, err := r.ReadString('\n')
			b.WriteString(line)
			if err != nil {
				break
			}
		}
		got <- b.String()
		_, _ = c.Write([]byte(reply))
	}()
	return got
}

// The real exchange is one write (NUL, AUTH EXTERNAL with the uid in hex, BEGIN) and one reply line.
func TestAuthExternalOneRoundTrip(t *testing.T) {
	uid := hex.EncodeToString([]byte(strconv.Itoa(os.Geteuid())))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tc := range []struct {
		reply, guid, err string
	}{
		{"OK 0123abcd\r\n", "0123abcd", ""},
		{"REJECTED EXTERNAL\r\n", "", "authentication refused"},
		{"OK 0123abcd\r\nDATA\r\n", "", "more than one reply line"},
		{"OK \r\n", "", "authentication refused"},
	} {
		client, server := net.Pipe()
		sent := fakeServer(t, server, tc.reply)
		guid, err := authExternal(ctx, client)
		if want := "\x00AUTH EXTERNAL " + uid + "\r\nBEGIN\r\n"; <-sent != want {
			t.Errorf("client sent something else than %q", want)
		}
		switch {
		case tc.err == "" && (err != nil || guid != tc.guid):
			t.Errorf("reply %q: guid %q, err %v; want %q", tc.reply, guid, err, tc.guid)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("reply %q: err %v, want one saying %q", tc.reply, err, tc.err)
		}
		client.Close()
		server.Close()
	}
}

// saidLines records what godbus writes to a saslDone before BEGIN, a line at a time.
type saidLines struct {
	*saslDone
	mu    sync.Mutex
	lines []string
	part  string
}

func (r *saidLines) Write(p []byte) (int, error) {
	r.mu.Lock()
	if !slices.Contains(r.lines, "BEGIN") {
		r.part += string(p)
		for {
			line, rest, ok := strings.Cut(r.part, "\r\n")
			if !ok {
				break
			}
			r.lines, r.part = append(r.lines, strings.TrimLeft(line, "\x00")), rest
		}
	}
	r.mu.Unlock()
	return r.saslDone.Write(p)
}

// godbus's own Auth is answered locally, and from its BEGIN on every byte goes to the socket both ways.
// This pins the conversation saslDone answers: godbus (its generic transport, which never negotiates
// descriptor passing) asks for the mechanisms, offers EXTERNAL without its data, and says BEGIN after
// the OK. A godbus that speaks otherwise fails here, not on a host's bus.
func TestSaslDoneAnswersGodbus(t *testing.T) {
	client, server := net.Pipe()
	s := &saidLines{saslDone: &saslDone{Conn: client, guid: "feedface"}}
	conn, err := godbus.NewConn(s)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		server.Close() // first: a send still blocked on the pipe must fail before godbus closes
		conn.Close()
	}()
	done := make(chan error, 1)
	go func() { done <- conn.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Geteuid()))}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("godbus Auth against the local answers: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("godbus Auth did not finish: it waited for a reply that never came")
	}
	s.mu.Lock()
	said := strings.Join(s.lines, "|")
	s.mu.Unlock()
	if want := "AUTH|AUTH EXTERNAL|BEGIN"; said != want {
		t.Fatalf("godbus said %q, want %q: saslDone answers that conversation only", said, want)
	}
	// The first message godbus sends now must reach the server whole.
	go func() { _ = conn.BusObject().Call("org.freedesktop.DBus.Hello", 0).Err }()
	_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
	hdr := make([]byte, 16)
	if _, err := server.Read(hdr); err != nil {
		t.Fatalf("server read: %v", err)
	}
	if hdr[0] != 'l' || hdr[1] != 1 { // little-endian, METHOD_CALL
		t.Fatalf("server got %q, want the start of a method call", hdr)
	}
}

// Every SASL line a client may send gets the answer a server that accepted EXTERNAL would give.
func TestSaslDoneLines(t *testing.T) {
	s := &saslDone{guid: "g"}
	for _, tc := range []struct{ in, out string }{
		{"\x00AUTH\r\n", "REJECTED EXTERNAL\r\n"},
		{"AUTH DBUS_COOKIE_SHA1 abc\r\n", "REJECTED EXTERNAL\r\n"},
		{"AUTH EXTERNAL 30\r\n", "OK g\r\n"},
		{"AUTH EXTERNAL\r\nDATA\r\n", "OK g\r\nOK g\r\n"},
		{"NEGOTIATE_UNIX_FD\r\n", "ERROR descriptor passing is not used\r\n"},
		{"CANCEL\r\n", "REJECTED EXTERNAL\r\n"},
	} {
		if _, err := s.Write([]byte(tc.in)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		n, err := s.Read(buf)
		if err != nil || string(buf[:n]) != tc.out {
			t.Errorf("%q: answered %q (%v), want %q", tc.in, buf[:n], err, tc.out)
		}
	}
	// Nothing was asked: a read is an error, not a wait on the socket.
	if _, err := s.Read(make([]byte, 8)); err == nil {
		t.Error("a read with no question pending succeeded")
	}
}

// signalMessage is a JobRemoved-like signal in the wire format whose header fields never end on an 8-byte
// boundary (whatever order godbus writes them in: each field's end is chosen so), so padding comes
// before the body.
func signalMessage(t *testing.T) []byte {
	t.Helper()
	msg := &godbus.Message{Type: godbus.TypeSignal, Headers: map[godbus.HeaderField]godbus.Variant{
		godbus.FieldPath:      godbus.MakeVariant(godbus.ObjectPath("/org/freedesktop/systemd1")),
		godbus.FieldInterface: godbus.MakeVariant("org.freedesktop.systemd1.Manager"),
		godbus.FieldMember:    godbus.MakeVariant("JobRemoved"),
		godbus.FieldSignature: godbus.MakeVariant(godbus.SignatureOf(uint32(0), "", "")),
	}, Body: []any{uint32(7), "done", "x"}}
	var b bytes.Buffer
	if err := msg.EncodeTo(&b, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Whole messages pass through unchanged, one after another, and a message cut short is an error before
// any of its bytes is handed on.
func TestFramesWholeMessages(t *testing.T) {
	msg := signalMessage(t)
	client, server := net.Pipe()
	f := newFrames(client)
	go func() {
		_, _ = server.Write(append(append([]byte{}, msg...), msg...))
		_, _ = server.Write(msg[:20])
		server.Close()
	}()
	for i := range 2 {
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(f, got); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("message %d: %q, %v; want %q", i, got, err, msg)
		}
	}
	if n, err := f.Read(make([]byte, 64)); n != 0 || err == nil {
		t.Fatalf("cut message: read %d bytes, %v; want 0 and an error", n, err)
	}
	// A length beyond the protocol's maximum is refused without reading on.
	huge := append([]byte{}, msg[:16]...)
	binary.LittleEndian.PutUint32(huge[4:8], 1<<28)
	if _, err := readMessage(bytes.NewReader(huge)); err == nil {
		t.Fatal("a 256 MiB message was accepted")
	}
	if _, err := readMessage(bytes.NewReader(append([]byte{'x'}, msg[1:]...))); err == nil {
		t.Fatal("a bad byte-order mark was accepted")
	}
}
