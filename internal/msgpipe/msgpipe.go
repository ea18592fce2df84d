package msgpipe

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/proc"
)

// ConfigFD and ResultFD are the child's inherited descriptors.
const (
	ConfigFD = 3
	ResultFD = 4
)

// Max bounds one message; an environ plus argv larger than this is refused by the writer.
const Max = 8 << 20

// Conn is a started child and the parent's ends of its two pipes.
type Conn struct {
	Proc *proc.Proc
	send *os.File // to the child's ConfigFD; nil once closed
	recv *os.File // from the child's ResultFD; nil once closed
}

// Start starts cmd with the two pipes added as its fds 3 and 4 after its three stdio Files; any Files
// after the first three become the child's fds 5 on.
func Start(cmd proc.Command) (*Conn, error) {
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("handshake pipe: %w", err)
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		cfgW.Close()
		return nil, fmt.Errorf("handshake pipe: %w", err)
	}
	files := make([]*os.File, 3, 5+max(len(cmd.Files)-3, 0))
	copy(files, cmd.Files)
	files = append(files, cfgR, resW)
	if len(cmd.Files) > 3 {
		files = append(files, cmd.Files[3:]...)
	}
	cmd.Files = files
	p, err := proc.Spawn(cmd)
	// The child holds its own copies now; ours must go so EOF means what the protocols say.
	cfgR.Close()
	resW.Close()
	if err != nil {
		cfgW.Close()
		resR.Close()
		return nil, err
	}
	return &Conn{Proc: p, send: cfgW, recv: resR}, nil
}

// Send writes b as one frame to the child.
func (c *Conn) Send(b []byte) error {
	if c.send == nil {
		return os.ErrClosed
	}
	return WriteFrame(c.send, b)
}

// SendJSON writes v as one JSON frame to the child.
func (c *Conn) SendJSON(v any) error {
	if c.send == nil {
		return os.ErrClosed
	}
	return WriteJSON(c.send, v)
}

// ReceiveJSON reads one JSON frame of the child's into v; io.EOF when the child closed its end (or
// exited) without one.
func (c *Conn) ReceiveJSON(v any) error {
	if c.recv == nil {
		return os.ErrClosed
	}
	return ReadJSON(c.recv, v)
}

// CloseSend closes the parent's write end: the child reads EOF. Closing twice is harmless.
func (c *Conn) CloseSend() {
	if c.send != nil {
		c.send.Close()
		c.send = nil
	}
}

// CloseReceive closes the parent's read end. Closing twice is harmless.
func (c *Conn) CloseReceive() {
	if c.recv != nil {
		c.recv.Close()
		c.recv = nil
	}
}

// Abort closes both pipes, kills the child (the parent's own child, held by its *proc.Proc) and reaps it.
func (c *Conn) Abort() {
	c.CloseSend()
	c.CloseReceive()
	_ = c.Proc.Signal(syscall.SIGKILL)
	_, _ = c.Proc.Wait()
}

// ChildFiles are the child's ends: the config it reads and the result it writes.
func ChildFiles(name string) (config, result *os.File) {
	return os.NewFile(ConfigFD, name+"-config"), os.NewFile(ResultFD, name+"-result")
}

// WriteJSON writes v as one length-prefixed JSON message.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return WriteFrame(w, b)
}

// ReadJSON reads one length-prefixed JSON message into v; io.EOF when the writer closed without one.
func ReadJSON(r io.Reader, v any) error {
	b, err := ReadFrame(r)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// WriteFrame writes b after its length (4 bytes, big-endian) in one write.
func WriteFrame(w io.Writer, b []byte) error {
	if len(b) > Max {
		return fmt.Errorf("handshake message of %d bytes exceeds %d", len(b), Max)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one length-prefixed message; io.EOF when the writer closed before its first byte.
func ReadFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > Max {
		return nil, fmt.Errorf("handshake message of %d bytes exceeds %d", n, Max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}
