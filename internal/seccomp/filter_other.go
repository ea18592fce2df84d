//go:build !amd64 && !arm64

package seccomp

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Filter is the default filter; on this architecture there is none.
type Filter struct {
	insts []unix.SockFilter
}

// Supported fails: the table (rules.go) is written for amd64 and arm64 only.
func Supported() error { return fmt.Errorf("%w: %s", ErrUnsupported, runtime.GOARCH) }

// Default fails as Supported does.
func Default() (*Filter, error) { return nil, Supported() }

// Len is the number of BPF instructions.
func (f *Filter) Len() int { return len(f.insts) }
