package launcher

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// record verifies a worker now against src (the launcher's, or a pass's: sources) and merges what its
// shim recorded.
func (l *Launcher) record(src fingerprint.Sources, rc worker.Receipt, ident fingerprint.Identity) (worker.Record, error) {
	v, err := fingerprint.Verify(src, ident)
	if err != nil {
		return worker.Record{}, fmt.Errorf("verify %s: %w", rc.ID, err)
	}
	rec := worker.Record{Receipt: rc, State: v.State, Reason: v.Reason}
	if rc.ID == "" && v.State == fingerprint.Running {
		rec.Reason = joinReason(rec.Reason, "no record of it in state dir "+l.StatePath+": signals are refused")
	}
	if rc.ID != "" {
		var ex records.ExitRecord
		if (&state.Dir{Path: l.WorkersDir()}).Read(rc.ID+".exit", &ex) == nil {
			records.ApplyExit(&rec, ex)
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

// Get returns one worker's record, verified now; ref is a worker id or a token. A record that cannot be
// read or verified is returned in state StateCorrupt or StateUnknownVersion (Damaged), without an error.
func (l *Launcher) Get(ctx context.Context, ref string) (worker.Record, error) {
	return l.get(ctx, l.Src, ref)
}

// get is Get verified against src.
func (l *Launcher) get(ctx context.Context, src fingerprint.Sources, ref string) (worker.Record, error) {
	rc, ident, err := l.Load(ref)
	var de *records.DamagedError
	if errors.As(err, &de) {
		return records.DamagedRecord(de), nil // shown for what it is: it does not blind a list
	}
	if err != nil {
		return worker.Record{}, err
	}
	return l.reconciled(ctx, src, rc, ident)
}

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
	src := l.Sources()
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
	names, err := (&state.Dir{Path: l.WorkersDir()}).Names("w-")
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
