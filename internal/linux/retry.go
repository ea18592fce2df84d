package linux

import (
	"errors"
	"syscall"
)

// Retry calls fn until it fails with something other than EINTR (or succeeds), and returns its result.
func Retry[T any](fn func() (T, error)) (T, error) {
	for {
		v, err := fn()
		if !errors.Is(err, syscall.EINTR) {
			return v, err
		}
	}
}

// RetryErr is Retry for a call that returns only an error.
func RetryErr(fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
