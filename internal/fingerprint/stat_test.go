package fingerprint

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// statLine builds a /proc/<pid>/stat line with the given comm and start time (field 22).
func statLine(comm string, start uint64) string {
	return fmt.Sprintf("4242 (%s) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %d 2400000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n", comm, start)
}

// The parser's table is internal/linux's; here: the start time comes through and malformed text is this
// package's ErrMalformed.
func TestReadStartTime(t *testing.T) {
	if got, err := ReadStartTime(strings.NewReader(statLine("my worker", 77))); err != nil || got != 77 {
		t.Fatalf("ReadStartTime = %d, %v; want 77", got, err)
	}
	if got, err := ReadStartTime(strings.NewReader("4242 (sleep) S 1 2")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("ReadStartTime of a truncated line = %d, %v; want ErrMalformed", got, err)
	}
}

// hermesStart is hermes' naive reading (split on whitespace, index 21), kept here to document the difference.
func hermesStart(line string) string {
	f := strings.Fields(line)
	if len(f) < 22 {
		return ""
	}
	return f[21]
}

func TestReadStartTimeDiffersFromHermesOnlyForWhitespaceComm(t *testing.T) {
	if got := hermesStart(statLine("sleep", 99)); got != "99" {
		t.Fatalf("hermes reading of a plain comm = %q, want 99", got)
	}
	if got := hermesStart(statLine("my worker", 99)); got == "99" {
		t.Fatalf("hermes reading of a comm with a space unexpectedly right")
	}
}
