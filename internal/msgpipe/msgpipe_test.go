package msgpipe

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	type msg struct{ Argv []string }
	if err := WriteJSON(&buf, msg{Argv: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	var out msg
	if err := ReadJSON(&buf, &out); err != nil || len(out.Argv) != 2 || out.Argv[1] != "b" {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
	if err := ReadJSON(&buf, &out); !errors.Is(err, io.EOF) {
		t.Fatalf("empty stream: %v, want EOF (the writer closed)", err)
	}
	// A length beyond the limit is refused before anything is allocated.
	if _, err := ReadFrame(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff})); err == nil {
		t.Fatal("oversized message accepted")
	}
	if err := WriteFrame(io.Discard, make([]byte, Max+1)); err == nil {
		t.Fatal("oversized message written")
	}
	// A truncated message is an error, never a half-read one.
	if _, err := ReadFrame(bytes.NewReader([]byte{0, 0, 0, 9, '{'})); err == nil {
		t.Fatal("truncated message accepted")
	}
}
