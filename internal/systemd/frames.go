package systemd

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// maxMessage is the D-Bus specification's limit on a whole message (128 MiB).
const maxMessage = 1 << 27

// frames reads a D-Bus byte stream one whole message at a time and hands the bytes of the current message
// on. godbus decodes straight from its transport and panics (outside any recover) when a read fails in
// the middle of a message, which closing a connection while a signal arrives does; from frames, a read
// fails only between messages, where godbus returns the error. It also turns godbus's dozen small reads
// per message into one or two.
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
