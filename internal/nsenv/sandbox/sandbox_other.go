//go:build !linux

package sandbox

import (
	"errors"
	"fmt"
)

// validateFS: the sandbox is built from Linux namespaces only.
func (s *Spec) validateFS() error {
	return fmt.Errorf("%w: %w", ErrInvalid, errors.ErrUnsupported)
}
