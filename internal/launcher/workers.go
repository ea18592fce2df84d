package launcher

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// load finds a worker by id (its record) or by token (the token alone is enough to verify and signal).
func (l *Launcher) load(ref string) (worker.Receipt, fingerprint.Identity, error) {
	if worker.IsID(ref) {
		rc, err := l.readRaw(ref)
		if errors.Is(err, worker.ErrNotFound) {
			return worker.Receipt{}, fingerprint.Identity{}, err
		}
		ident, err := checkRecord(ref, rc, err)
		if err != nil {
			return worker.Receipt{ID: ref}, fingerprint.Identity{}, err // a *damagedError
		}
		return rc, ident, nil
	}
	ident, err := fingerprint.ParseToken(ref)
	if err != nil {
		return worker.Receipt{}, fingerprint.Identity{}, fmt.Errorf("%w: not a worker id (w-<12 hex>) nor a valid token: %w", worker.ErrInvalid, err)
	}
	// A token of a worker we recorded gets its record's detail (profile, exit status). A token without a
	// record is verified like any other (status answers), but it is no authority to signal (owns): anyone
	// can mint one, the codec is public.
	// The record is found through the token index and confirmed to carry exactly this token.
	if rc, ok := l.byToken(ref); ok {
		return rc, ident, nil
	}
	return receiptOf(ident), ident, nil
}

// receiptOf is the receipt a bare token implies.
func receiptOf(i fingerprint.Identity) worker.Receipt {
	rc := worker.Receipt{
		Token: i.Token(), PID: i.PID, Cgroup: i.Cgroup, CgroupID: i.CgroupID, Unit: i.Unit,
		InvocationID: i.InvocationID, BootID: i.BootID, MachineID: i.MachineID, StartTime: i.Start,
		InstantiationEpoch: i.Epoch(), Fingerprint: i.Fingerprint(), Verification: "verified",
	}
	if i.Unverified {
		rc.Verification = "unverified"
	}
	return rc
}

// record verifies a worker now against src (the launcher's, or a pass's: sources) and merges what its
// shim recorded.
func (l *Launcher) record(src fingerprint.Sources, rc worker.Receipt, ident fingerprint.Identity) (worker.Record, error) {
	v, err := fingerprint.Verify(src, ident)
	if err != nil {
		return worker.Record{}, fmt.Errorf("verify %s: %w", rc.ID, err)
	}
	rec := worker.Record{Receipt: rc, State: v.State, Reason: v.Reason}
	if rc.ID == "" && v.State == fingerprint.Running {
		rec.Reason = joinReason(rec.Reason, "no record of it in state dir "+l.state+": signals are refused")
	}
	if rc.ID != "" {
		var ex exitRecord
		if (&state.Dir{Path: l.workersDir()}).Read(rc.ID+".exit", &ex) == nil {
			applyExit(&rec, ex)
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

func applyExit(r *worker.Record, ex exitRecord) {
	r.ExitCode, r.Signal, r.EndedAt, r.LeaderEndedAt = ex.ExitCode, ex.Signal, ex.EndedAt, ex.LeaderEndedAt
	r.TimedOut, r.OOMKilled, r.ShimLost = ex.TimedOut, ex.OOMKilled, ex.ShimLost
	r.LedgerError = ex.LedgerError
	r.LogBytes, r.LogDroppedBytes, r.LogRotations, r.LogError = ex.LogBytes, ex.LogDropped, ex.LogRotations, ex.LogError
	if ex.MemoryPeak > r.MemoryPeak {
		r.MemoryPeak = ex.MemoryPeak
	}
}

// Get returns one worker's record, verified now; ref is a worker id or a token. A record that cannot be
// read or verified is returned in state StateCorrupt or StateUnknownVersion (Damaged), without an error.
func (l *Launcher) Get(ctx context.Context, ref string) (worker.Record, error) {
	return l.get(ctx, l.src, ref)
}

// get is Get verified against src.
func (l *Launcher) get(ctx context.Context, src fingerprint.Sources, ref string) (worker.Record, error) {
	rc, ident, err := l.load(ref)
	var de *damagedError
	if errors.As(err, &de) {
		return damagedRecord(de), nil // shown for what it is: it does not blind a list
	}
	if err != nil {
		return worker.Record{}, err
	}
	return l.reconciled(ctx, src, rc, ident)
}

// sources is the launcher's fingerprint sources for one pass over many records (List, Ledger): the
// machine id read once, now, for all of them (the boot id is the launcher's already: KeepBootID). A
// machine id rewritten on disk during the pass is seen by the next one.
func (l *Launcher) sources() fingerprint.Sources { return l.src.Pinned() }

// Status is Get under the name of the `hlaunch status` command.
func (l *Launcher) Status(ctx context.Context, ref string) (worker.Record, error) {
	return l.Get(ctx, ref)
}

// List returns every worker record in the state directory, each verified now, oldest first. A cancelled
// ctx ends it between two records: List then returns ctx's error (wrapped) and no records.
func (l *Launcher) List(ctx context.Context) ([]worker.Record, error) {
	return l.ListPage(ctx, "", 0)
}

// ListPage is List for one page: at most limit records (limit <= 0: no bound) of the workers whose ids
// sort after after ("": from the first), in id order. Only the page's records are read and verified, so a
// page costs the same however many records the state directory keeps (one directory read aside); the
// next page starts after the last id of this one.
func (l *Launcher) ListPage(ctx context.Context, after string, limit int) ([]worker.Record, error) {
	ids, err := l.IDs(ctx)
	if err != nil {
		return nil, err
	}
	ids = ids[sort.SearchStrings(ids, after+"\x00"):]
	if len(ids) == 0 {
		return nil, nil
	}
	src := l.sources()
	var out []worker.Record
	for _, id := range ids {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("workers: %w", context.Cause(ctx))
		}
		rec, err := l.get(ctx, src, id)
		if errors.Is(err, worker.ErrNotFound) {
			continue // removed since the listing (a concurrent gc): it is not a worker any more
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, nil
}

// IDs returns the ids of the workers that have a record, in name order. It only lists the state
// directory: no record is read and nothing is verified, so it costs one directory read however many
// records there are; ctx is not consulted during that one read.
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
		if worker.IsID(n) {
			ids = append(ids, n)
		}
	}
	return ids, nil
}

func refOf(rc worker.Receipt, ref string) string {
	if rc.ID != "" {
		return rc.ID
	}
	return ref
}
