package records

import (
	"context"
	"path/filepath"
	"time"

	"github.com/hlaunch/hlaunch/internal/pidsignal"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// exitLockWait bounds the wait for a worker's lock before its exit record is written anyway: a record
// written unlocked may lose a concurrent writer's fields, a record not written loses the end.
const exitLockWait = 10 * time.Second

// WorkerLock is the worker's lock file, beside its record in the workers directory (reachable by the
// launcher's uid only): every whole-cgroup signal holds it from before its freeze until after its thaw
// (fingerprint.Handle.SetLock, internal/pidsignal.Tree), and every write of the worker's exit record holds
// it from its read to its write (UpdateExit), in the CLI, the sidecar and the shim alike.
func WorkerLock(workers, id string) string { return filepath.Join(workers, id+".lock") }

// UpdateExit rewrites the worker's exit record under its lock: it reads what is there now (written by
// any of the shim, stop and a lost shim's reader), lets merge change it, and writes it back unless merge
// says there is nothing to write. So the writer that comes second merges into the first's record instead
// of overwriting it.
func UpdateExit(workers, id string, merge func(ex *ExitRecord) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), exitLockWait)
	defer cancel()
	if unlock, err := pidsignal.LockFile(ctx, WorkerLock(workers, id)); err == nil {
		defer unlock()
	}
	d, err := state.Open(workers)
	if err != nil {
		return err
	}
	var ex ExitRecord
	_ = d.Read(id+".exit", &ex) // none yet: the zero record
	if !merge(&ex) {
		return nil
	}
	return d.Write(id+".exit", ex, true)
}

// ExitRecord is what the shim learns when the worker's leader ends; stored as <id>.exit beside the receipt.
type ExitRecord struct {
	ExitCode *int   `json:"exit_code,omitempty"` // the leader's
	Signal   string `json:"signal,omitempty"`    // the signal that ended the leader
	// LeaderEndedAt is when the leader ended; EndedAt when the worker did: when nothing of its tree was
	// left (the same moment, or later when children outlived the leader).
	LeaderEndedAt string `json:"leader_ended_at,omitempty"`
	EndedAt       string `json:"ended_at"`
	TimedOut      bool   `json:"timed_out,omitempty"`
	OOMKilled     bool   `json:"oom_killed,omitempty"`
	MemoryPeak    uint64 `json:"memory_peak,omitempty"`
	Stopped       bool   `json:"stopped,omitempty"` // ended by `hlaunch stop` (recorded by stop when the shim died with it)
	// ShimLost: the shim was gone without recording the end; hlaunch's reader recorded it (orphan.go).
	ShimLost bool `json:"shim_lost,omitempty"`
	// LedgerError: the ledger's end record could not be written (why); this record keeps the end.
	LedgerError string `json:"ledger_error,omitempty"`
	// The copy of the worker's output into its log (internal/shim/logcopy.go): bytes written, bytes dropped, rotations,
	// and why output was first dropped.
	LogBytes     int64  `json:"log_bytes,omitempty"`
	LogDropped   int64  `json:"log_dropped_bytes,omitempty"`
	LogRotations int    `json:"log_rotations,omitempty"`
	LogError     string `json:"log_error,omitempty"`
}

// SetLog records what the copy of the worker's output did.
func (rec *ExitRecord) SetLog(st LogStats) {
	rec.LogBytes, rec.LogDropped, rec.LogRotations, rec.LogError = st.Bytes, st.Dropped, st.Rotations, st.Error
}

// LogStats is what SetLog recorded.
func (rec *ExitRecord) LogStats() LogStats {
	return LogStats{Bytes: rec.LogBytes, Dropped: rec.LogDropped, Rotations: rec.LogRotations, Error: rec.LogError}
}

// LogStats is what a shim's copy of its worker's output did; it goes into the worker's end record.
type LogStats struct {
	Bytes     int64  // written to the log (across rotations)
	Dropped   int64  // read from the worker and not written
	Rotations int    // the times the log was rotated while the worker ran
	Error     string // why output was first dropped
}

// ApplyExit copies what the shim recorded of the worker's end into its record.
func ApplyExit(r *worker.Record, ex ExitRecord) {
	r.ExitCode, r.Signal, r.EndedAt, r.LeaderEndedAt = ex.ExitCode, ex.Signal, ex.EndedAt, ex.LeaderEndedAt
	r.TimedOut, r.OOMKilled, r.ShimLost = ex.TimedOut, ex.OOMKilled, ex.ShimLost
	r.LedgerError = ex.LedgerError
	r.LogBytes, r.LogDroppedBytes, r.LogRotations, r.LogError = ex.LogBytes, ex.LogDropped, ex.LogRotations, ex.LogError
	if ex.MemoryPeak > r.MemoryPeak {
		r.MemoryPeak = ex.MemoryPeak
	}
}
