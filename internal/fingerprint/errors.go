package fingerprint

import (
	"errors"
	"fmt"
)

var (
	// ErrMalformed reports a token or hermes fingerprint that is not well formed, or that was altered or
	// truncated (its checksum does not match).
	ErrMalformed = errors.New("fingerprint: malformed")
	// ErrUnknownVersion reports, along with ErrMalformed, a token of a format this build does not know: a
	// version prefix or payload version other than its own, or flags it does not define (a newer hlaunch's).
	ErrUnknownVersion = errors.New("fingerprint: unknown token version")
	// ErrUnverifiedRow reports a hermes fingerprint column holding "unverified": hermes could not capture the
	// identity, so the process may be held while it lives but must never be signalled.
	ErrUnverifiedRow = errors.New("fingerprint: hermes row is unverified")
	// ErrLegacyRow reports a hermes row without a fingerprint (NULL or empty): a bare PID, never signalled.
	ErrLegacyRow = errors.New("fingerprint: hermes row has no fingerprint (legacy)")
	// ErrRefused reports a refusal: the identity does not prove who the process is. It is an answer, not a
	// failure to retry; RefusalError carries the verdict.
	ErrRefused = errors.New("fingerprint: refused")
	// ErrNotRunning reports that there is nothing left to signal (the worker or its leader has exited).
	ErrNotRunning = errors.New("fingerprint: not running")
	// errClosed reports use of a Handle after Close.
	errClosed = errors.New("fingerprint: handle is closed")
)

// RefusalError is returned by Authorize and AuthorizeHermes when the verdict is not Running. It unwraps to
// ErrNotRunning for Exited, and to ErrRefused (plus ErrMalformed for Malformed) for every other state, so
// callers can tell "nothing to signal" from "not allowed to signal" and both from "could not read facts".
type RefusalError struct {
	Verdict Verdict
}

// Error names the state and says why in one line.
func (e *RefusalError) Error() string {
	if e.Verdict.State == Exited {
		return fmt.Sprintf("fingerprint: not running: %s: %s", e.Verdict.State, e.Verdict.Reason)
	}
	return fmt.Sprintf("fingerprint: refused: %s: %s", e.Verdict.State, e.Verdict.Reason)
}

// Unwrap lets errors.Is match ErrNotRunning, ErrRefused and ErrMalformed.
func (e *RefusalError) Unwrap() []error {
	switch e.Verdict.State {
	case Exited:
		return []error{ErrNotRunning}
	case Malformed:
		return []error{ErrRefused, ErrMalformed}
	default:
		return []error{ErrRefused}
	}
}

// unknownVersion is the error of a token of an unknown format: it reads as ErrMalformed and is both
// ErrMalformed and ErrUnknownVersion.
type unknownVersion struct{}

func (unknownVersion) Error() string { return ErrMalformed.Error() }

func (unknownVersion) Is(target error) bool {
	return target == ErrMalformed || target == ErrUnknownVersion
}
