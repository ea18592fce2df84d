package handshake

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/msgpipe"
	"github.com/hlaunch/hlaunch/internal/proc"
)

// writeConfig writes cfg as Release sends it: Config.MarshalBinary in one msgpipe frame (Conn.Send is
// msgpipe.WriteFrame on the config pipe).
func writeConfig(w io.Writer, cfg Config) error {
	b, err := cfg.MarshalBinary()
	if err != nil {
		return err
	}
	return msgpipe.WriteFrame(w, b)
}

func TestConfigFrames(t *testing.T) {
	var buf bytes.Buffer
	in := Config{Argv: []string{"a", "b"}, Env: []string{"X=1"}, Cwd: "/"}
	if err := writeConfig(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := readConfig(&buf)
	if err != nil || out.Argv[1] != "b" || out.Env[0] != "X=1" || out.Cwd != "/" {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
	if _, err := readConfig(&buf); !errors.Is(err, io.EOF) {
		t.Fatalf("empty stream: %v, want EOF (the parent went away)", err)
	}
	// A truncated message is an error, never a half-read config.
	if _, err := readConfig(bytes.NewReader([]byte{0, 0, 0, 9, 1})); err == nil {
		t.Fatal("truncated message accepted")
	}
}

func TestErrorUnwrap(t *testing.T) {
	err := error(&Error{Failure{Stage: "exec", Errno: int(unix.ENOENT), Message: "no"}})
	if !errors.Is(err, ErrFailed) || !errors.Is(err, unix.ENOENT) || proc.ExitCodeFor(err) != 127 {
		t.Fatalf("unwrap: %v", err)
	}
}
