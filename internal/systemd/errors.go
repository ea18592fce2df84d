package systemd

import "errors"

var (
	// ErrNoBus means no usable D-Bus connection to a service manager could be made. The wrapping error names
	// the path that was tried and why it was rejected, and a remedy where one exists.
	ErrNoBus = errors.New("no systemd bus")
	// ErrJobFailed means systemd finished a job with a result other than "done"; the wrapping error carries
	// the unit and the result ("failed", "timeout", "canceled", "dependency", ...).
	ErrJobFailed = errors.New("systemd job failed")
	// ErrUnitExists means a unit of that name is loaded and is not a failed or inactive leftover that could
	// be reset, or it still existed after one reset and retry.
	ErrUnitExists = errors.New("systemd unit already exists")
	// ErrBadUnitName means a unit name is not acceptable to systemd (or to hlaunch's stricter rules).
	ErrBadUnitName = errors.New("invalid unit name")
	// ErrNoSuchUnit means systemd does not know the unit (org.freedesktop.systemd1.NoSuchUnit).
	ErrNoSuchUnit = errors.New("no such systemd unit")
	// ErrBadSpec means a ScopeSpec failed validation before anything was sent to systemd.
	ErrBadSpec = errors.New("invalid scope spec")
)
