package main

import (
	"errors"
	"fmt"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// errWaitTimeout: `hlaunch wait --timeout` elapsed while the worker still ran (exit 124, as timeout(1)).
var errWaitTimeout = errors.New("timed out waiting for the worker")

// exitTimeout is the exit code of `hlaunch wait` when --timeout elapsed first.
const exitTimeout = 124

// invalidError is bad command-line input. Its message names the flag or argument; it unwraps to
// worker.ErrInvalid so that the CLI and the launcher give one answer for "bad input, nothing started":
// exit 125 and the JSON code "invalid".
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return worker.ErrInvalid }

// invalidf returns an invalidError with a formatted message.
func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// exitStatus ends the command with this code and prints nothing more: the answer (a status, a child's
// exit code, a doctor report) has already been written.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exitCodeFor maps an error to the process exit code and the stable JSON error code.
func exitCodeFor(err error) (int, string) {
	if errors.Is(err, errWaitTimeout) {
		return exitTimeout, "timeout"
	}
	return worker.ExitCode(err), worker.Code(err)
}
