package systemd

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
)

// wholeMessages is a bus socket handed to godbus.NewConn: godbus's own authentication talks through it
// unchanged, and once the client has said BEGIN every read goes through frames. godbus's Unix transport
// (what godbus.Dial gives) panics when a read fails inside a message: it passes the -1 count of a failed
// recvmsg to a bytes.Buffer, which closing a connection while the manager broadcasts a signal does; its
// generic transport decodes straight from a net.Conn and panics there too (its decoder's align runs
// outside any recover). From frames, a read fails only between messages, where godbus returns the error.
type wholeMessages struct {
	net.Conn

	mu   sync.Mutex
	line []byte  // what the client wrote of its current SASL line
	in   *frames // set once the client wrote BEGIN
}

// Write passes p to the socket, watching the client's SASL lines for BEGIN until it comes.
func (w *wholeMessages) Write(p []byte) (int, error) {
	w.mu.Lock()
	for rest := p; w.in == nil && len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			w.line = append(w.line, rest...)
			break
		}
		w.line = append(w.line, rest[:i+1]...)
		if string(bytes.TrimLeft(w.line, "\x00")) == "BEGIN\r\n" {
			w.in = newFrames(w.Conn)
		}
		w.line, rest = w.line[:0], rest[i+1:]
	}
	w.mu.Unlock()
	return w.Conn.Write(p)
}

// Read reads the socket as it is during authentication, and one whole message at a time after it.
func (w *wholeMessages) Read(p []byte) (int, error) {
	w.mu.Lock()
	in := w.in
	w.mu.Unlock()
	if in == nil {
		return w.Conn.Read(p)
	}
	return in.Read(p)
}

// maxMessage is the D-Bus specification's limit on a whole message (128 MiB).
const maxMessage = 1 << 27

// frames reads a D-Bus byte stream one whole message at a time and hands the bytes of the current message
// on, so that a read fails only between messages. It also turns godbus's dozen small reads per message
// into one or two.
type frames struct {
	r   *bufio.Reader
	cur []byte // the unread rest of the current message
}

func newFrames(r io.Reader) *frames { return &frames{r: bufio.NewReaderSize(r, 4096)} }

// Read hands on the current message's bytes, reading the next whole message when it is used up.
func (f *frames) Read(p []byte) (int, error) {
	if len(f.cur) == 0 {
		msg, err := readMessage(f.r)
		if err != nil {
			return 0, err
		}
		f.cur = msg
	}
	n := copy(p, f.cur)
	f.cur = f.cur[n:]
	return n, nil
}

// readMessage reads one whole message: the fixed 16-byte header, then the header fields, the padding to
// 8 bytes and the body, whose lengths the fixed header gives.
func readMessage(r io.Reader) ([]byte, error) {
	var hdr [16]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	var order binary.ByteOrder
	switch hdr[0] {
	case 'l':
		order = binary.LittleEndian
	case 'B':
		order = binary.BigEndian
	default:
		return nil, fmt.Errorf("dbus: invalid byte-order mark %q", hdr[0])
	}
	body := uint64(order.Uint32(hdr[4:8]))
	fields := uint64(order.Uint32(hdr[12:16]))
	total := (16+fields+7)&^7 + body
	if total > maxMessage {
		return nil, fmt.Errorf("dbus: message of %d bytes exceeds the limit of %d", total, maxMessage)
	}
	msg := make([]byte, total)
	copy(msg, hdr[:])
	if _, err := io.ReadFull(r, msg[16:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return msg, nil
}
