package fingerprint

import (
	"errors"
	"math"
)

// VerifyHermes applies the identity rules to a row of the hermes gateway's database: a PID and its
// fingerprint column. A fingerprint from another boot (or another life of PID 1) is ForeignBoot;
// "unverified", NULL/empty and legacy rows are Unverified (refused: hermes itself never signals them); a
// malformed column is Malformed; the PID alive with the recorded start time is Running; another start time is
// Recycled; a dead PID is Exited. hermes records no machine id and no cgroup, so neither is checked.
// The error is non-nil only when facts could not be read.
func VerifyHermes(src Sources, pid int, fp string) (Verdict, error) {
	h, v, err := inspectHermes(src, pid, fp)
	if h != nil {
		h.Close()
	}
	return v, err
}

// AuthorizeHermes is Authorize for a hermes row: the leader's pidfd is pinned and the start time re-checked
// through it. The Handle knows no cgroup, so SignalAll on it signals only the leader.
func AuthorizeHermes(src Sources, pid int, fp string) (*Handle, Verdict, error) {
	h, v, err := inspectHermes(src, pid, fp)
	if err != nil {
		return nil, Verdict{}, err
	}
	if v.State != Running {
		return nil, v, &RefusalError{Verdict: v}
	}
	return h, v, nil
}

func inspectHermes(src Sources, pid int, fp string) (*Handle, Verdict, error) {
	id, v, ok := hermesIdentity(pid, fp)
	if !ok {
		return nil, v, nil
	}
	return inspect(src, id, false)
}

// hermesIdentity turns a hermes row into an Identity without cgroup or machine id, or a refusing verdict.
func hermesIdentity(pid int, fp string) (Identity, Verdict, bool) {
	epoch, start, err := ParseHermesFingerprint(fp)
	switch {
	case errors.Is(err, ErrUnverifiedRow):
		return Identity{}, verdict(Unverified, "hermes row is unverified: held while it lives, never signalled"), false
	case errors.Is(err, ErrLegacyRow):
		return Identity{}, verdict(Unverified, "hermes row has no fingerprint (legacy): a bare PID is never signalled"), false
	case err != nil:
		return Identity{}, verdict(Malformed, "%v", err), false
	case pid <= 0 || pid > math.MaxInt32:
		// pid_t is 32 bits: a larger number would reach pidfd_open as another process's.
		return Identity{}, verdict(Malformed, "pid %d is not a process", pid), false
	}
	boot, pid1 := splitEpoch(epoch)
	return Identity{Version: FormatVersion, BootID: boot, PID1Start: pid1, PID: pid, Start: start}, Verdict{}, true
}
