package worker

import (
	"errors"
	"fmt"
)

// Sentinel errors. Each maps to one documented exit code (see ExitCode and docs/exit-codes.md) and to one
// stable error code in the sidecar's JSON errors (see Code).
var (
	// ErrInvalid: bad input (a flag, a spec field, a profile name, a file); nothing was started.
	ErrInvalid = errors.New("invalid launch")
	// ErrNotFound: no worker with that id in the state directory.
	ErrNotFound = errors.New("no such worker")
	// ErrRefused: the identity does not verify as running (foreign boot or machine, recycled); zero signals sent.
	ErrRefused = errors.New("refused: identity does not match")
	// ErrUnverified: the identity was never captured; such a worker is never signalled.
	ErrUnverified = errors.New("refused: identity unverified")
	// ErrNotRunning: the worker has already exited.
	ErrNotRunning = errors.New("worker is not running")
	// ErrLeaderExited: a signal for the worker's leader, whose leader has exited while the rest of its tree
	// still runs (the worker runs: it is its whole tree). It wraps ErrNotRunning (exit 1); --all signals the
	// tree.
	ErrLeaderExited = fmt.Errorf("%w: its leader has exited and the rest of its tree still runs (signal it with --all)", ErrNotRunning)
	// ErrDegraded: no restart-safe placement exists and the launch required one; nothing was started.
	ErrDegraded = errors.New("no restart-safe placement")
	// ErrNoSpace: the state or ledger directory's filesystem has no room for a new detached worker's
	// records (internal/records/space.go); nothing is left running (exit 75, EX_TEMPFAIL: it ends when space is freed).
	ErrNoSpace = errors.New("no space for records")
	// ErrKeyHeld: another worker holding the same key verifies as running; nothing was started.
	ErrKeyHeld = errors.New("key is held by a running worker")
	// ErrNotEmpty: the worker's cgroup could not be verified empty.
	ErrNotEmpty = errors.New("worker cgroup not verified empty")
	// ErrTimedOut: a foreground worker ran past its --timeout and was stopped (exit 124, as timeout(1)).
	ErrTimedOut = errors.New("worker timed out")
	// ErrCannotRun: the command exists but could not be executed (exit 126).
	ErrCannotRun = errors.New("command cannot run")
	// ErrCommandNotFound: the command was not found in the child's PATH (exit 127).
	ErrCommandNotFound = errors.New("command not found")
	// ErrNoLog: the worker has no log hlaunch can read back: its output went to inherited descriptors or
	// /dev/null, or to a file its caller named (--log), which is the caller's to read (code "no_log").
	ErrNoLog = errors.New("worker has no log to read")
)

// Invalid marks err as bad input (exit 125, JSON code "invalid").
func Invalid(err error) error { return fmt.Errorf("%w: %w", ErrInvalid, err) }

// Exit codes of the hlaunch command, documented in docs/exit-codes.md.
const (
	ExitOK         = 0
	ExitExited     = 1   // status/wait: the worker has exited (status only)
	ExitRefused    = 3   // foreign boot or machine, recycled: zero signals sent
	ExitUnverified = 4   // unverified identity: zero signals sent
	ExitKeyHeld    = 73  // --key held by a running worker
	ExitDegraded   = 75  // --require-scope and no restart-safe placement (EX_TEMPFAIL: a host-level condition)
	ExitNoSpace    = 75  // no room for a new worker's records (EX_TEMPFAIL: a host-level condition)
	ExitTimeout    = 124 // a foreground --timeout was reached (as timeout(1)); wait --timeout ran out
	ExitInternal   = 125 // hlaunch's own error or bad input; nothing started
	ExitCannotRun  = 126
	ExitNotFound   = 127
)

// ExitCode maps an error from this package to the hlaunch command's exit code.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrRefused):
		return ExitRefused
	case errors.Is(err, ErrUnverified):
		return ExitUnverified
	case errors.Is(err, ErrKeyHeld):
		return ExitKeyHeld
	case errors.Is(err, ErrDegraded):
		return ExitDegraded
	case errors.Is(err, ErrNoSpace):
		return ExitNoSpace
	case errors.Is(err, ErrTimedOut):
		return ExitTimeout
	case errors.Is(err, ErrCannotRun):
		return ExitCannotRun
	case errors.Is(err, ErrCommandNotFound):
		return ExitNotFound
	case errors.Is(err, ErrNotRunning):
		return ExitExited
	default:
		return ExitInternal
	}
}

// Code maps an error to the stable code used in JSON errors (sidecar, --json output).
func Code(err error) string {
	switch {
	case errors.Is(err, ErrInvalid):
		return "invalid"
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrRefused):
		return "refused"
	case errors.Is(err, ErrUnverified):
		return "unverified"
	case errors.Is(err, ErrLeaderExited):
		return "leader_exited"
	case errors.Is(err, ErrNotRunning):
		return "not_running"
	case errors.Is(err, ErrDegraded):
		return "degraded"
	case errors.Is(err, ErrNoSpace):
		return "no_space"
	case errors.Is(err, ErrKeyHeld):
		return "key_held"
	case errors.Is(err, ErrTimedOut):
		return "timeout"
	case errors.Is(err, ErrNotEmpty):
		return "not_empty"
	case errors.Is(err, ErrCannotRun):
		return "cannot_run"
	case errors.Is(err, ErrCommandNotFound):
		return "command_not_found"
	case errors.Is(err, ErrNoLog):
		return "no_log"
	default:
		return "internal"
	}
}
