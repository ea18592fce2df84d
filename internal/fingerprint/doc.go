// Package fingerprint captures a worker's identity, encodes it as a token the caller can store, verifies a
// token against the running system, and grants signal authority only to a verified worker.
//
// An identity is the worker's cgroup plus the boot it lives in: machine id, boot id, PID 1's start time,
// the cgroup path and its id (inode), and the leader's PID and start time. A PID alone is not an identity:
// after a reboot or a PID wrap-around the same number names a stranger, whom a signal sent by number
// reaches. Refusal is the default: every verdict other than Running sends zero signals.
//
// Signals never go to a PID number. Authorize pins a pidfd of the leader and a directory fd of the cgroup
// and re-checks the identity through those pins; the Handle it returns can only reach the process and the
// cgroup that were verified, so no check-then-act window exists. See docs/identity.md.
//
// This package does its few cgroup file operations itself, on a directory fd, so that a cgroup removed and
// re-created at the same path can never be addressed through an old handle.
package fingerprint
