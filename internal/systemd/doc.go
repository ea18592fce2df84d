// Package systemd talks to a systemd service manager over D-Bus on hlaunch's behalf: it finds the bus the
// way hermes does (derived afresh on every call, never cached), starts transient scopes that adopt an
// already-running, parked child, waits for the job result without the go-systemd job-channel deadlock, and
// stops, kills, inspects and resets units.
//
// It wraps github.com/coreos/go-systemd/v22/dbus and never hands out its types, so callers depend only on
// this package's small surface and the go-systemd version can change underneath.
//
// Tests run against a real systemd user manager started by the systemdtest subpackage.
package systemd
