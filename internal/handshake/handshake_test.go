package handshake

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/proc"
)

func TestMessages(t *testing.T) {
	var buf bytes.Buffer
	in := Config{Argv: []string{"a", "b"}, Env: []string{"X=1"}, Cwd: "/"}
	if err := WriteMsg(&buf, in); err != nil {
		t.Fatal(err)
	}
	var out Config
	if err := ReadMsg(&buf, &out); err != nil || out.Argv[1] != "b" || out.Env[0] != "X=1" || out.Cwd != "/" {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
	if err := ReadMsg(&buf, &out); !errors.Is(err, io.EOF) {
		t.Fatalf("empty stream: %v, want EOF (the child exec'd)", err)
	}
	// A length beyond the limit is refused before anything is allocated.
	if err := ReadMsg(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}), &out); err == nil {
		t.Fatal("oversized message accepted")
	}
	// A truncated message is an error, never a half-read config.
	if err := ReadMsg(bytes.NewReader([]byte{0, 0, 0, 9, '{'}), &out); err == nil {
		t.Fatal("truncated message accepted")
	}
}

func TestErrorUnwrap(t *testing.T) {
	err := error(&Error{Failure{Stage: "exec", Errno: int(unix.ENOENT), Message: "no"}})
	if !errors.Is(err, ErrFailed) || !errors.Is(err, unix.ENOENT) || proc.ExitCodeFor(err) != 127 {
		t.Fatalf("unwrap: %v", err)
	}
}
