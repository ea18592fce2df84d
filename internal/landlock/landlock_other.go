//go:build !linux

package landlock

import "errors"

// ScopeABI is the first Landlock ABI with the scopes Restrict sets.
const ScopeABI = 6

// ErrUnsupported is returned when the kernel has no Landlock scopes.
var ErrUnsupported = errors.New("landlock scopes unsupported")

// ABI is 0: Landlock is Linux's.
func ABI() int { return 0 }

// Supported always fails off Linux.
func Supported() error { return ErrUnsupported }

// Restrict always fails off Linux.
func Restrict() error { return ErrUnsupported }
