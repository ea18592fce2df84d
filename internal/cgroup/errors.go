package cgroup

import (
	"errors"
	"fmt"
)

var (
	// ErrBadParent is returned for a cgroup parent or worker name that would leave the hierarchy root
	// (an absolute escape, a ".." component) or is otherwise not a usable cgroup path.
	ErrBadParent = errors.New("cgroup: bad parent path")
	// ErrNotOurs is returned when a parent or worker cgroup exists but was not created by hlaunch
	// (it has no hlaunch marker). hlaunch never places workers in, or removes, a cgroup it does not own.
	ErrNotOurs = errors.New("cgroup: cgroup exists but was not created by hlaunch")
	// ErrNotWritable is returned when a parent (or the directory a missing parent would be made in) is
	// not writable by this process: a parent made by root, seen by a non-root hlaunch, is this.
	ErrNotWritable = errors.New("cgroup: cgroup parent not writable")
	// ErrExists is returned by Create when the worker cgroup already exists.
	ErrExists = errors.New("cgroup: worker cgroup already exists")
	// ErrUnsupportedLimit is returned when a requested limit cannot be applied on this host; the
	// message names the limit. Nothing is left created.
	ErrUnsupportedLimit = errors.New("cgroup: limit not supported on this host")
	// ErrPopulated is returned by Delete (as a *PopulatedError) and RemoveParentIfEmpty while a process
	// remains in the cgroup or below it; a removal that failed for another reason is not ErrPopulated.
	ErrPopulated = errors.New("cgroup: cgroup still has members")
	// ErrNoUnified is returned for operations that need a cgroup2 tree on a legacy (v1-only) host.
	ErrNoUnified = errors.New("cgroup: no cgroup2 hierarchy on this host")
	// ErrNotFound is returned when no cgroup hierarchy is mounted, or a worker cgroup to load is missing.
	ErrNotFound = errors.New("cgroup: not found")
	// ErrOutsideNamespace is returned by ProcCgroup2 for a process whose cgroup is outside this process's
	// cgroup namespace (/proc/<pid>/cgroup names it "/../..."): it has no path under our cgroupfs mount.
	// The error is an *OutsideNamespaceError, which carries that path as read.
	ErrOutsideNamespace = errors.New("cgroup: cgroup outside this process's cgroup namespace")
	// ErrFallbackForbidden is returned by Kill when cgroup.kill is missing and Host.NoKillFallback
	// forbids the freeze-kill-thaw fallback.
	ErrFallbackForbidden = errors.New("cgroup: cgroup.kill unavailable and fallback forbidden")
)

// ErrBadLimit is returned by Create for a limit value no kernel accepts (negative, weight above 10000).
var ErrBadLimit = errors.New("cgroup: bad limit value")

// OutsideNamespaceError is ProcCgroup2's error for a process whose cgroup lies outside this process's
// cgroup namespace; errors.Is(err, ErrOutsideNamespace) holds for it. Path names nothing under this
// process's cgroupfs mount (cleaned, it would name another cgroup), but the names in it can be told apart:
// a caller that keeps such a process apart by them (the sidecar's peer check) reads them here instead of
// reading /proc/<pid>/cgroup a second time, when the process may have moved.
type OutsideNamespaceError struct {
	File string // the file read: /proc/<pid>/cgroup or /proc/self/cgroup
	Path string // its "0::" line's path as the kernel wrote it, e.g. "/../x"
}

// Error says which file named which path outside the namespace.
func (e *OutsideNamespaceError) Error() string {
	return fmt.Sprintf("%v: %s names %q", ErrOutsideNamespace, e.File, e.Path)
}

// Unwrap makes errors.Is(err, ErrOutsideNamespace) hold.
func (e *OutsideNamespaceError) Unwrap() error { return ErrOutsideNamespace }

// ControllerError is an ErrUnsupportedLimit for a limit whose controller this host (or this parent) does
// not offer: errors.Is(err, ErrUnsupportedLimit) holds for it, and Controller names the controller, so
// that a caller can tell which of its limits to leave out (a launcher's default limits: docs/security.md,
// "Default resource bounds").
type ControllerError struct {
	Controller string // "memory", "pids" or "cpu"
	Err        error  // the ErrUnsupportedLimit, worded for the limit
}

// Error is the wrapped error's sentence.
func (e *ControllerError) Error() string { return e.Err.Error() }

// Unwrap makes errors.Is(err, ErrUnsupportedLimit) hold.
func (e *ControllerError) Unwrap() error { return e.Err }

// PopulatedError is Delete's error while a process remains: errors.Is(err, ErrPopulated) holds for it.
type PopulatedError struct {
	Dir  string // the directory (in one hierarchy) that still holds a process, in itself or below it
	PIDs []int  // the processes found there, as this process's PID namespace sees them
}

// Error names the directory and the processes found.
func (e *PopulatedError) Error() string {
	return fmt.Sprintf("%v: %s holds PIDs %v", ErrPopulated, e.Dir, e.PIDs)
}

// Unwrap makes errors.Is(err, ErrPopulated) hold.
func (e *PopulatedError) Unwrap() error { return ErrPopulated }
