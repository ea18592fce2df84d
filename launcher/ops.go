package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hlaunch/hlaunch/cgroup"
	"github.com/hlaunch/hlaunch/fingerprint"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/sysfile"
)

// load finds a worker by id (its record) or by token (the token alone is enough to verify and signal).
func (l *Launcher) load(ref string) (Receipt, fingerprint.Identity, error) {
	if isID(ref) {
		d := &state.Dir{Path: l.workersDir()}
		var rc Receipt
		if err := d.Read(ref, &rc); err != nil {
			if errors.Is(err, state.ErrNotFound) {
				return Receipt{}, fingerprint.Identity{}, fmt.Errorf("%w: %s (state dir %s)", ErrNotFound, ref, l.state)
			}
			return Receipt{}, fingerprint.Identity{}, err
		}
		if rc.ID != ref {
			// The id names files beside the record (<id>.exit, the ledger's): it must be the file's own.
			return Receipt{}, fingerprint.Identity{}, fmt.Errorf("%w: record %s names worker id %q", ErrInvalid, ref, rc.ID)
		}
		ident, err := fingerprint.ParseToken(rc.Token)
		if err != nil {
			return Receipt{}, fingerprint.Identity{}, fmt.Errorf("record %s: %w", ref, err)
		}
		return rc, ident, nil
	}
	ident, err := fingerprint.ParseToken(ref)
	if err != nil {
		return Receipt{}, fingerprint.Identity{}, fmt.Errorf("%w: not a worker id (w-<12 hex>) nor a valid token: %w", ErrInvalid, err)
	}
	// A token of a worker we recorded gets its record's detail (profile, exit status). A token without a
	// record is verified like any other (status answers), but it is no authority to signal (owns): anyone
	// can mint one, the codec is public.
	if ids, err := (&state.Dir{Path: l.workersDir()}).Names("w-"); err == nil {
		for _, id := range ids {
			var r Receipt
			if isID(id) && (&state.Dir{Path: l.workersDir()}).Read(id, &r) == nil && r.Token == ref && r.ID == id {
				return r, ident, nil
			}
		}
	}
	return receiptOf(ident), ident, nil
}

// receiptOf is the receipt a bare token implies.
func receiptOf(i fingerprint.Identity) Receipt {
	rc := Receipt{
		Token: i.Token(), PID: i.PID, Cgroup: i.Cgroup, CgroupID: i.CgroupID, Unit: i.Unit,
		InvocationID: i.InvocationID, BootID: i.BootID, MachineID: i.MachineID, StartTime: i.Start,
		InstantiationEpoch: i.Epoch(), Fingerprint: i.Fingerprint(), Verification: "verified",
	}
	if i.Unverified {
		rc.Verification = "unverified"
	}
	return rc
}

// record verifies a worker now and merges what its shim recorded.
func (l *Launcher) record(rc Receipt, ident fingerprint.Identity) (Record, error) {
	v, err := fingerprint.Verify(l.src, ident)
	if err != nil {
		return Record{}, fmt.Errorf("verify %s: %w", rc.ID, err)
	}
	rec := Record{Receipt: rc, State: string(v.State), Reason: v.Reason}
	if rc.ID == "" && v.State == fingerprint.Running {
		rec.Reason = joinReason(rec.Reason, "no record of it in state dir "+l.state+": signals are refused")
	}
	if rc.ID != "" {
		var ex exitRecord
		if (&state.Dir{Path: l.workersDir()}).Read(rc.ID+".exit", &ex) == nil {
			rec.applyExit(ex)
		}
	}
	if v.State == fingerprint.Running && ident.Cgroup != "" {
		if g, err := l.workerGroup(rc, ident); err == nil {
			if st, err := g.Stats(); err == nil {
				rec.MemoryCurrent, rec.MemoryPeak, rec.PidsCurrent = st.MemoryCurrent, st.MemoryPeak, st.PidsCurrent
				rec.CPUUsageNS, rec.OOMKills = st.CPUUsageNS, st.OOMKills
				rec.OOMKilled = rec.OOMKilled || st.OOMKills > 0
			}
		}
	}
	return rec, nil
}

func (r *Record) applyExit(ex exitRecord) {
	r.ExitCode, r.Signal, r.EndedAt, r.LeaderEndedAt = ex.ExitCode, ex.Signal, ex.EndedAt, ex.LeaderEndedAt
	r.TimedOut, r.OOMKilled = ex.TimedOut, ex.OOMKilled
	if ex.MemoryPeak > r.MemoryPeak {
		r.MemoryPeak = ex.MemoryPeak
	}
}

// Get returns one worker's record, verified now; ref is a worker id or a token.
func (l *Launcher) Get(ctx context.Context, ref string) (Record, error) {
	rc, ident, err := l.load(ref)
	if err != nil {
		return Record{}, err
	}
	return l.record(rc, ident)
}

// Status is Get under the name of the `hlaunch status` command.
func (l *Launcher) Status(ctx context.Context, ref string) (Record, error) { return l.Get(ctx, ref) }

// List returns every worker record in the state directory, each verified now, oldest first.
func (l *Launcher) List(ctx context.Context) ([]Record, error) {
	ids, err := l.IDs(ctx)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, id := range ids {
		rec, err := l.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // removed since the listing (a concurrent gc): it is not a worker any more
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// IDs returns the ids of the workers that have a record, in name order. It only lists the state
// directory: no record is read and nothing is verified, so it costs one directory read however many
// records there are.
func (l *Launcher) IDs(ctx context.Context) ([]string, error) {
	names, err := (&state.Dir{Path: l.workersDir()}).Names("w-")
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil, nil
		}
		return nil, err
	}
	ids := names[:0]
	for _, n := range names {
		if isID(n) {
			ids = append(ids, n)
		}
	}
	return ids, nil
}

// refusal turns a verdict that does not authorize a signal into the matching error.
func refusal(v fingerprint.Verdict) error {
	switch v.State {
	case fingerprint.Exited:
		return fmt.Errorf("%w: %s", ErrNotRunning, v.Reason)
	case fingerprint.Unverified:
		return fmt.Errorf("%w: %s", ErrUnverified, v.Reason)
	default:
		return fmt.Errorf("%w: %s: %s", ErrRefused, v.State, v.Reason)
	}
}

// refusalOr sorts an Authorize answer: nil with a handle; the refusal's own error (exit 3 or 4, zero
// signals sent) when the identity does not verify; a wrapped error when facts could not be read.
func refusalOr(h *fingerprint.Handle, v fingerprint.Verdict, err error) error {
	var re *fingerprint.RefusalError
	switch {
	case errors.As(err, &re):
		return refusal(re.Verdict)
	case err != nil:
		return fmt.Errorf("verify: %w", err)
	case h == nil:
		return refusal(v)
	}
	return nil
}

// authorize pins the worker for signalling, or says why not: the identity must verify as running (pinned
// through fingerprint.Authorize) and its cgroup must be the one hlaunch recorded for it (owns). Zero
// signals are sent on refusal.
func (l *Launcher) authorize(ref string) (*fingerprint.Handle, Receipt, fingerprint.Identity, error) {
	rc, ident, err := l.load(ref)
	if err != nil {
		return nil, rc, ident, err
	}
	h, v, err := fingerprint.Authorize(l.src, ident)
	if err = refusalOr(h, v, err); err != nil {
		return nil, rc, ident, err
	}
	if err := l.owns(rc, ident); err != nil {
		h.Close()
		return nil, rc, ident, err
	}
	return h, rc, ident, nil
}

// Signal sends sig to the worker's leader, or with all to every process in its cgroup, only when its
// identity verifies as running.
func (l *Launcher) Signal(ctx context.Context, ref string, sig syscall.Signal, all bool) error {
	h, rc, _, err := l.authorize(ref)
	if err != nil {
		return err
	}
	defer h.Close()
	if all {
		return signalAll(ctx, h, rc.Sandbox, sig)
	}
	if err := h.SignalLeader(sig); errors.Is(err, fingerprint.ErrNotRunning) {
		// The worker runs (its tree lives) but the one process this signal was for is gone.
		return fmt.Errorf("%w: %s: leader PID %d", ErrLeaderExited, refOf(rc, ref), rc.PID)
	} else if err != nil {
		return fmt.Errorf("signal: %w", err)
	}
	return nil
}

// Stop sends SIGTERM to the whole worker, waits up to grace for its cgroup to empty, then kills the whole
// cgroup. It returns the final record, and an error unless the cgroup is verified empty.
func (l *Launcher) Stop(ctx context.Context, ref string, grace time.Duration) (Record, error) {
	h, rc, ident, err := l.authorize(ref)
	if errors.Is(err, ErrNotRunning) {
		// Idempotent, as systemctl stop and docker stop are: an ended worker is stopped; its final record.
		l.removeEnded(rc, ident)
		return l.Get(ctx, refOf(rc, ref))
	}
	if err != nil {
		return Record{}, err
	}
	defer h.Close()
	killed, err := stopHandle(ctx, h, rc.Sandbox, grace)
	if err != nil {
		return Record{}, err
	}
	if rc.ID != "" {
		l.recordStopped(rc, killed)
	}
	l.removeEnded(rc, ident)
	rec, err := l.Get(ctx, refOf(rc, ref))
	if err != nil {
		return Record{}, err
	}
	if rec.State == string(fingerprint.Running) {
		return rec, fmt.Errorf("%w: still running after stop", ErrNotEmpty)
	}
	return rec, nil
}

// removeEnded removes an ended worker's raw cgroup when it is empty (its shim, killed with it, could not).
func (l *Launcher) removeEnded(rc Receipt, ident fingerprint.Identity) {
	if rc.Mode == ModeCgroup && ident.Cgroup != "" {
		if g, err := l.workerGroup(rc, ident); err == nil {
			_ = g.Delete()
		}
	}
}

// stopHandle is the stop sequence on a verified worker: SIGTERM to every member (but a sandbox's
// forwarding init), up to grace for the cgroup (or, without one, the leader) to empty, then SIGKILL to all.
// It reports whether the kill was needed, and fails unless the worker is verified gone.
func stopHandle(ctx context.Context, h *fingerprint.Handle, sandbox bool, grace time.Duration) (killed bool, err error) {
	// A cgroup that vanishes under us (systemd collects an empty scope) is a worker that is over.
	if err := signalAll(ctx, h, sandbox, syscall.SIGTERM); errors.Is(err, fingerprint.ErrNotRunning) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("stop: SIGTERM: %w", err)
	}
	gctx, cancel := context.WithTimeout(ctx, grace)
	err = h.WaitEmpty(gctx)
	cancel()
	if err == nil {
		return false, nil
	}
	if err := h.SignalAll(ctx, syscall.SIGKILL); errors.Is(err, fingerprint.ErrNotRunning) {
		return true, nil
	} else if err != nil {
		return true, fmt.Errorf("stop: kill: %w", err)
	}
	kctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := h.WaitEmpty(kctx); err != nil {
		return true, fmt.Errorf("%w: %w", ErrNotEmpty, err)
	}
	return true, nil
}

// signalAll sends sig to every process of a verified worker. A sandboxed worker's leader is its init,
// which forwards what it gets to the target; it is left out (for any signal but SIGKILL) so that the target,
// reached directly, does not hear the signal a second time.
func signalAll(ctx context.Context, h *fingerprint.Handle, sandbox bool, sig syscall.Signal) error {
	if sandbox {
		return h.SignalAllButLeader(ctx, sig)
	}
	return h.SignalAll(ctx, sig)
}

// LegacyStop stops a hermes row's process (SIGTERM, grace, SIGKILL) only when its fingerprint verifies;
// it succeeds only once the process is verified gone.
func (l *Launcher) LegacyStop(ctx context.Context, pid int, fp string, grace time.Duration) (Record, error) {
	h, v, err := fingerprint.AuthorizeHermes(l.src, pid, fp)
	if err = refusalOr(h, v, err); err != nil {
		return Record{}, err
	}
	defer h.Close()
	killed, err := stopHandle(ctx, h, false, grace)
	if err != nil {
		return Record{}, err
	}
	rec := Record{Receipt: Receipt{PID: pid, Fingerprint: fp}, State: string(fingerprint.Exited), Reason: "stopped"}
	if killed {
		rec.Signal = "SIGKILL"
	}
	return rec, nil
}

func refOf(rc Receipt, ref string) string {
	if rc.ID != "" {
		return rc.ID
	}
	return ref
}

// recordStopped writes (or completes) the exit record when the shim could not (it died with the cgroup).
func (l *Launcher) recordStopped(rc Receipt, killed bool) {
	d := &state.Dir{Path: l.workersDir()}
	var ex exitRecord
	if d.Read(rc.ID+".exit", &ex) == nil && ex.EndedAt != "" {
		return // the shim recorded the end itself
	}
	// Nothing, or only the leader's status (the shim died with the tree before the end): complete it.
	ex.EndedAt, ex.Stopped = time.Now().UTC().Format(time.RFC3339Nano), true
	if ex.ExitCode == nil && ex.Signal == "" {
		ex.Signal = "SIGTERM"
		if killed {
			ex.Signal = "SIGKILL"
		}
	}
	_ = d.Write(rc.ID+".exit", ex, true)
	finishLedger(l.ledger, rc.ID, ex)
}

// Wait blocks until the worker has ended (or ctx ends) and returns its final record.
func (l *Launcher) Wait(ctx context.Context, ref string) (Record, error) {
	for {
		rec, err := l.Get(ctx, ref)
		if err != nil {
			return Record{}, err
		}
		ended := rec.State != string(fingerprint.Running)
		// The shim writes the exit status just after the leader ends; give it a moment to land.
		if ended && (rec.ExitCode != nil || rec.Signal != "" || rec.ID == "" || !ShimAlive(rec.Receipt)) {
			return rec, nil
		}
		select {
		case <-ctx.Done():
			return rec, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// ShimAlive reports whether the worker's shim still runs: its PID names a live process (not a zombie)
// and, when the receipt has the shim's start time, that process started then, so a recycled PID is never
// taken for the shim. It only decides whether an exit record may still come (Wait, the sidecar's watcher);
// nothing is ever signalled on its word.
func ShimAlive(rc Receipt) bool {
	if rc.ShimPID <= 0 {
		return false
	}
	b, err := sysfile.ReadFile(fmt.Sprintf("/proc/%d/stat", rc.ShimPID))
	if err != nil {
		return false
	}
	// The state is the first field after the last ')' (comm may hold anything).
	if i := bytes.LastIndexByte(b, ')'); i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X' {
		return false
	}
	if rc.ShimStart == 0 {
		return true // a receipt written before shims recorded their start time
	}
	start, err := fingerprint.ReadStartTime(bytes.NewReader(b))
	return err == nil && start == rc.ShimStart
}

// LegacyStatus applies the identity rules to a hermes row: a PID and its "<epoch>|<start>" fingerprint.
func (l *Launcher) LegacyStatus(ctx context.Context, pid int, fp string) (Record, error) {
	v, err := fingerprint.VerifyHermes(l.src, pid, fp)
	if err != nil {
		return Record{}, fmt.Errorf("verify: %w", err)
	}
	return Record{Receipt: Receipt{PID: pid, Fingerprint: fp}, State: string(v.State), Reason: v.Reason}, nil
}

// LegacySignal signals a hermes row's process only when its fingerprint verifies.
func (l *Launcher) LegacySignal(ctx context.Context, pid int, fp string, sig syscall.Signal) error {
	h, v, err := fingerprint.AuthorizeHermes(l.src, pid, fp)
	if err = refusalOr(h, v, err); err != nil {
		return err
	}
	defer h.Close()
	return h.SignalLeader(sig)
}

// gcOrphans removes empty worker cgroups under the default parent that no record names.
func (l *Launcher) gcOrphans(recs []Record, minAge time.Duration) []string {
	if l.host == nil || l.host.Unified == "" {
		return nil
	}
	parent, err := l.host.CleanParent(l.cfg.Defaults.CgroupParent)
	if err != nil {
		return nil
	}
	known := map[string]bool{}
	for _, r := range recs {
		known[r.Cgroup] = true
	}
	ents, err := os.ReadDir(filepath.Join(l.host.Unified, parent))
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range ents {
		path := parent + "/" + e.Name()
		if !e.IsDir() || !isID(e.Name()) || known[path] {
			continue
		}
		// A cgroup made for a launch in flight is empty and unrecorded too, until its shim or target runs in
		// it: only one older than minAge (Retention.OrphanAge) is an orphan (the sidecar collects while it spawns).
		if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < minAge {
			continue
		}
		g, err := l.host.Hold(cgroup.Claim{Path: path, Worker: e.Name()})
		if err != nil {
			continue // not hlaunch's (no marker on it or its parent): never touched
		}
		if pop, err := g.Populated(); err != nil || pop {
			continue
		}
		if g.Delete() == nil {
			removed = append(removed, e.Name())
		}
	}
	return removed
}
