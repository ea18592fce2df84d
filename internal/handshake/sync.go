package handshake

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/affinity"
	"github.com/hlaunch/hlaunch/nsenv/sandbox"
)

// The protocol, over two pipes the stub inherits as fds 3 and 4:
//
//	parent                                   stub (hlaunch __init)
//	  start stub, blocked reading fd 3  ---->
//	  place it (clone3 into v2, v1 joins,
//	  StartTransientUnit naming its PID)
//	  write Config (length-prefixed,   ---->  read Config: this IS the go-ahead
//	    its binary encoding)
//	                                            enter sandbox, chdir, look up argv[0],
//	                                            install the seccomp filter (sandbox)
//	                                            execve(target)   (fd 4 is close-on-exec)
//	  read fd 4: EOF                     <----  exec succeeded
//	        or a Failure JSON            <----  something failed; the stub exits 126/127
//
// No byte is written to fd 4 on success, so the parent learns of a successful exec from EOF alone.

// ConfigFD and ResultFD are the stub's inherited descriptors.
const (
	ConfigFD = 3
	ResultFD = 4
)

// maxConfig bounds a Config message; an environ plus argv larger than this is refused by the parent.
const maxConfig = 8 << 20

// Config is everything the stub needs to become the target program. It travels in its own binary
// encoding (config_codec.go), which keeps every byte of argv, the environ and the paths.
type Config struct {
	Argv    []string
	Env     []string
	Cwd     string
	Sandbox *sandbox.Spec
	// CPUs, when not zero, is the CPU set the target starts with: the stub was started with its parent's
	// pin (internal/affinity) and gives the target the set its parent was started with.
	CPUs affinity.Set
}

// Failure is the stub's report of why the target did not start.
type Failure struct {
	Stage   string `json:"stage"` // "config", "sandbox", "chdir", "lookup", "seccomp", "exec"
	Errno   int    `json:"errno,omitempty"`
	Message string `json:"message"`
}

// ErrFailed wraps every Failure the stub reports.
var ErrFailed = errors.New("child failed before exec")

// Error describes a Failure; it is returned by the parent side wrapped with ErrFailed.
type Error struct{ Failure }

// Error says at which stage the stub failed and why.
func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Stage, e.Message) }

// Unwrap makes errors.Is(err, ErrFailed) and errors.Is(err, syscall.ENOENT) work.
func (e *Error) Unwrap() []error {
	errs := []error{ErrFailed}
	if e.Errno != 0 {
		errs = append(errs, syscall.Errno(e.Errno))
	}
	return errs
}

// WriteMsg writes v as one length-prefixed JSON message.
func WriteMsg(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFrame(w, b)
}

// WriteConfig writes cfg as one length-prefixed message in its binary encoding.
func WriteConfig(w io.Writer, cfg Config) error {
	b, err := cfg.MarshalBinary()
	if err != nil {
		return err
	}
	return writeFrame(w, b)
}

// ReadConfig reads what WriteConfig wrote; io.EOF when the writer closed without one.
func ReadConfig(r io.Reader) (Config, error) {
	var cfg Config
	b, err := readFrame(r)
	if err == nil {
		err = cfg.UnmarshalBinary(b)
	}
	return cfg, err
}

// writeFrame writes b after its length (4 bytes, big-endian).
func writeFrame(w io.Writer, b []byte) error {
	if len(b) > maxConfig {
		return fmt.Errorf("handshake message of %d bytes exceeds %d", len(b), maxConfig)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err := w.Write(buf)
	return err
}

// ReadMsg reads one length-prefixed JSON message into v; io.EOF when the writer closed without one.
func ReadMsg(r io.Reader, v any) error {
	b, err := readFrame(r)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// readFrame reads one length-prefixed message.
func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxConfig {
		return nil, fmt.Errorf("handshake message of %d bytes exceeds %d", n, maxConfig)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}
