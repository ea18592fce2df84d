package worker

import (
	"encoding/json"
	"time"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"golang.org/x/sys/unix"
)

// Receipt is what a launch hands back: everything needed to find, verify and signal the worker later.
// Its JSON form is the `hlaunch exec --detach` output, the sidecar's POST /v1/workers answer, and the
// schema in docs/schema/receipt.schema.json.
type Receipt struct {
	ID      string   `json:"id"`      // worker id, "w-<12 hex>"
	Token   string   `json:"token"`   // the identity token (fingerprint package); the only signal authority
	PID     int      `json:"pid"`     // the leader's PID as the host sees it
	Mode    Mode     `json:"mode"`    // ModeScoped, ModeCgroup, ModeDegraded or ModeNone
	Profile string   `json:"profile"` // normalized profile name
	Home    string   `json:"home"`    // the target profile's home
	Argv    []string `json:"argv"`    // argv with credential-looking values redacted, its first 4 KiB (RecordedArgv)

	Cgroup       string        `json:"cgroup,omitempty"`        // cgroup path relative to the hierarchy root
	CgroupID     uint64        `json:"cgroup_id,omitempty"`     // inode of the v2 cgroup directory
	Unit         string        `json:"unit,omitempty"`          // systemd unit, when scoped
	InvocationID string        `json:"invocation_id,omitempty"` // systemd InvocationID, when scoped
	Limits       cgroup.Limits `json:"limits"`                  // limits as applied
	Key          string        `json:"key,omitempty"`
	Log          string        `json:"log,omitempty"`        // the file that receives stdout and stderr, when one does
	ShimPID      int           `json:"shim_pid,omitempty"`   // the detached worker's shim (its parent)
	ShimStart    uint64        `json:"shim_start,omitempty"` // the shim's start time (field 22 of its /proc stat)
	// DeadlineBoottimeNS is when the worker's --timeout falls, in CLOCK_BOOTTIME nanoseconds of the boot
	// BootID names (0: no timeout); GraceNS is its --grace. Recorded so that something other than the
	// shim can enforce the deadline when the shim is gone (internal/launcher/orphan.go, docs/identity.md).
	DeadlineBoottimeNS int64 `json:"deadline_boottime_ns,omitempty"`
	GraceNS            int64 `json:"grace_ns,omitempty"`
	// Sandbox says the leader is the sandbox's init, which forwards signals to the target: a whole-worker
	// signal leaves it out so that the target hears the signal once.
	Sandbox bool `json:"sandbox,omitempty"`
	// Seccomp is, for a sandboxed worker, SeccompDefault or SeccompOff: whether it runs under the
	// system-call filter. Empty without a sandbox.
	Seccomp Seccomp `json:"seccomp,omitempty"`
	// Landlock is, for a sandboxed worker, LandlockScoped or LandlockUnavailable: whether the kernel set
	// its Landlock scopes (abstract Unix sockets, signals). Empty without a sandbox.
	Landlock Landlock `json:"landlock,omitempty"`
	// KeptGroups are, for a sandboxed worker of an unprivileged launcher, the launcher's supplementary
	// groups (host gids), which the worker keeps: the kernel denies setgroups in the user namespace an
	// unprivileged launcher makes, so a socket or file that trusts one of them serves the worker
	// (docs/security.md, "The child's identity"). Empty otherwise (a root launcher's worker keeps none).
	KeptGroups []int `json:"kept_groups,omitempty"`

	BootID             string `json:"boot_id"`
	MachineID          string `json:"machine_id"`
	StartTime          uint64 `json:"start_time"`          // field 22 of /proc/<pid>/stat, clock ticks since boot
	InstantiationEpoch string `json:"instantiation_epoch"` // hermes: "<boot_id>:<pid1 start>"
	Fingerprint        string `json:"fingerprint"`         // hermes: "<epoch>|<start>" or "unverified"
	Verification       string `json:"verification"`        // "verified" or "unverified"
	StartedAt          string `json:"started_at"`          // RFC 3339, UTC
	Warning            string `json:"warning,omitempty"`   // the one degrade warning, when degraded
}

// Record is a receipt plus what is known about the worker now; `hlaunch ps --json` prints a list of them.
type Record struct {
	Receipt
	State  fingerprint.State `json:"state"`            // fingerprint.Running, Exited, ForeignBoot, ForeignMachine, Recycled, Unverified; StateCorrupt, StateUnknownVersion
	Reason string            `json:"reason,omitempty"` // one line: why this state
	// RecordError is, for a record in state StateCorrupt or StateUnknownVersion, why it cannot be read or
	// verified (the decode, file type or token error); such a record shows only its id and the key it names.
	RecordError   string `json:"record_error,omitempty"`
	ExitCode      *int   `json:"exit_code,omitempty"`       // when it exited normally and the status is known
	Signal        string `json:"signal,omitempty"`          // when a signal ended it, e.g. "SIGKILL"
	EndedAt       string `json:"ended_at,omitempty"`        // when the worker ended: nothing of its tree left
	LeaderEndedAt string `json:"leader_ended_at,omitempty"` // when its leader ended (exit_code, signal are the leader's)
	TimedOut      bool   `json:"timed_out,omitempty"`
	OOMKilled     bool   `json:"oom_killed,omitempty"`
	// ShimLost says the worker's shim is gone without recording its end (Reason starts with
	// ReasonShimLost): running, its deadline enforced by hlaunch's next reader; exited, its end recorded
	// by that reader.
	ShimLost      bool   `json:"shim_lost,omitempty"`
	MemoryCurrent uint64 `json:"memory_current,omitempty"`
	MemoryPeak    uint64 `json:"memory_peak,omitempty"`
	PidsCurrent   uint64 `json:"pids_current,omitempty"`
	CPUUsageNS    uint64 `json:"cpu_usage_ns,omitempty"` // CPU time used by the worker's cgroup, when known
	OOMKills      uint64 `json:"oom_kills,omitempty"`    // OOM kills in the worker's cgroup, when known
	// LedgerError says why the execution's ledger record lacks the end this record has (the ledger's
	// filesystem was full when the worker ended).
	LedgerError string `json:"ledger_error,omitempty"`
	// LogBytes, LogDroppedBytes and LogRotations are, for a detached worker with a log, what its shim did
	// with the worker's output (while it runs: as of the last rotation or start of dropped output): bytes written to the log (across rotations), bytes it dropped (a write
	// failed, or the log's filesystem was down to its RecordReserve), and how often it rotated the log at
	// its limit. LogError is why output was first dropped.
	LogBytes        int64  `json:"log_bytes,omitempty"`
	LogDroppedBytes int64  `json:"log_dropped_bytes,omitempty"`
	LogRotations    int    `json:"log_rotations,omitempty"`
	LogError        string `json:"log_error,omitempty"`
}

// The states of a worker whose record cannot be read or verified (Record.State). Such a worker has no
// Identity to verify: it is listed with Record.RecordError, never signalled, and `hlaunch gc` moves its
// record into <state-dir>/quarantine (docs/security.md, "The state directory").
const (
	// StateCorrupt: the record does not decode as a receipt, is not a regular file, names another worker
	// id, or holds a token that does not decode.
	StateCorrupt fingerprint.State = "corrupt"
	// StateUnknownVersion: the record is well formed but its token is of a format this build does not know
	// (a newer hlaunch's, after a downgrade).
	StateUnknownVersion fingerprint.State = "unknown-version"
)

// Damaged reports whether s is the state of a record that cannot be read or verified.
func Damaged(s fingerprint.State) bool { return s == StateCorrupt || s == StateUnknownVersion }

// damagedJSON is the JSON form of a damaged record: only what is known of it (docs/schema/receipt.schema.json,
// $defs/damaged_record).
type damagedJSON struct {
	ID          string            `json:"id"`
	Key         string            `json:"key,omitempty"`
	State       fingerprint.State `json:"state"`
	Reason      string            `json:"reason"`
	RecordError string            `json:"record_error"`
}

// MarshalJSON writes a record; one in a damaged state (Damaged) as its id, key, state, reason and
// record_error only, not the empty fields of a receipt it does not have.
func (r Record) MarshalJSON() ([]byte, error) {
	if Damaged(r.State) {
		return json.Marshal(damagedJSON{ID: r.ID, Key: r.Key, State: r.State, Reason: r.Reason, RecordError: r.RecordError})
	}
	type plain Record // the same fields, without this method
	return json.Marshal(plain(r))
}

// ExitSettled reports whether an ended worker's end is final: the one rule Wait and the sidecar's watcher
// share. Its shim records the leader's exit status as the leader ends, and the worker's end (EndedAt)
// once the tree has ended and it has drained the worker's output into the log, so the end has settled
// once EndedAt is recorded, and a log read after it is whole; or once the shim is gone (shimAlive false:
// nothing more will come, e.g. the shim was killed; a worker known only by its token has no shim).
// shimAlive, a /proc read, is asked only while EndedAt is missing.
func (r Record) ExitSettled(shimAlive func(Receipt) bool) bool {
	return r.EndedAt != "" || !shimAlive(r.Receipt)
}

// SetIdentity fills in who the worker is.
func (rc *Receipt) SetIdentity(ident fingerprint.Identity, unit, invocationID string) {
	rc.Token, rc.PID, rc.Cgroup, rc.CgroupID = ident.Token(), ident.PID, ident.Cgroup, ident.CgroupID
	rc.Unit, rc.InvocationID = unit, invocationID
	rc.BootID, rc.MachineID, rc.StartTime = ident.BootID, ident.MachineID, ident.Start
	rc.InstantiationEpoch, rc.Fingerprint = ident.Epoch(), ident.Fingerprint()
	rc.Verification = "verified"
	if ident.Unverified {
		rc.Verification = "unverified"
	}
	rc.StartedAt = time.Now().UTC().Format(time.RFC3339Nano)
}

// Boottime is now on CLOCK_BOOTTIME, in nanoseconds. A deadline is kept on this clock, not on the
// monotonic clock (each process has its own origin) nor on wall time (a clock step would move it): it
// counts from the boot, across processes and suspend, and the record's boot id says which boot it is of.
func Boottime() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0 // never on Linux since 2.6.39; a zero deadline is "none", never "passed"
	}
	return ts.Nano()
}

// SetDeadline records the worker's deadline, timeout from now, and its grace; nothing without a timeout.
// The shim calls it just before it writes the record: its own timer starts a moment later, so a reader's
// enforcement never comes before the shim's would have.
func (rc *Receipt) SetDeadline(timeout, grace time.Duration) {
	if timeout <= 0 {
		return
	}
	if now := Boottime(); now > 0 {
		rc.DeadlineBoottimeNS, rc.GraceNS = now+int64(timeout), int64(grace)
	}
}

// Now is the current time as records write it (UTC, RFC 3339 with nanoseconds).
func Now() string { return time.Now().UTC().Format(time.RFC3339Nano) }
