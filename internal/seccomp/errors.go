package seccomp

import "errors"

// ErrUnsupported is returned by Default on an architecture the table has no numbers for: a sandbox there
// starts only with the filter turned off (--seccomp off), never silently without it.
var ErrUnsupported = errors.New("seccomp: no system-call filter for this architecture")
