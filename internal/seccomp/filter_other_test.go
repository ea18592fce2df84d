//go:build !amd64 && !arm64

package seccomp

import (
	"errors"
	"testing"
)

// Without a table the filter is refused, never installed empty.
func TestUnsupportedArchitecture(t *testing.T) {
	if _, err := Default(); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Default: %v, want ErrUnsupported", err)
	}
	if err := Supported(); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Supported: %v, want ErrUnsupported", err)
	}
}
