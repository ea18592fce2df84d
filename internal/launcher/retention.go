package launcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Retention is how long what hlaunch keeps of ended workers lives: their records, exit records and the
// per-worker logs hlaunch made (<state-dir>/logs), and the ledger's records. docs/cli.md gives the
// defaults and the bound they put on the state directory.
type Retention struct {
	// Keep is how many ended workers are kept, the most recently ended first; 0 keeps none.
	Keep int
	// MaxAge removes an ended worker whose end is older than this, whatever Keep says; 0: no age limit.
	MaxAge time.Duration
	// LedgerKeep bounds the ledger: the records beyond the LedgerKeep most recently written go, except
	// those of executions that have not ended; 0 keeps every record. A Launcher that collects again
	// (the sidecar) counts the records of its own launches between two reads of the ledger directory,
	// and others' from the next read, at most a minute later (records.Store.PruneLedger).
	LedgerKeep int
	// LedgerMaxAge removes ended ledger records last written longer ago than this; 0: no age limit.
	LedgerMaxAge time.Duration
	// OrphanAge is how old an empty worker cgroup that no record names must be before it is taken for an
	// orphan (a foreground hlaunch SIGKILLed before it removed its own): a cgroup made for a launch in flight
	// is empty and unrecorded too, until its shim or target runs in it. DefaultRetention: 3 minutes, longer
	// than any launch takes (the sidecar bounds a spawn at two); 0 takes every such cgroup, for a host where
	// no launch runs meanwhile.
	OrphanAge time.Duration
	// KeepParent leaves the cgroup parent in place even when it is empty (the sidecar, which places the
	// next spawn there: removing it under a launch in flight would fail that launch).
	KeepParent bool `json:"-"`
}

// DefaultRetention is what the sidecar collects by, on its own, and what `hlaunch gc` applies unless told
// otherwise: the last 1,000 ended workers or 24 hours of them, and a ledger of at most 10,000 records or 7
// days (ADR 0010 gives the bound this puts on the state directory).
func DefaultRetention() Retention {
	return Retention{Keep: 1000, MaxAge: 24 * time.Hour, LedgerKeep: 10000, LedgerMaxAge: 7 * 24 * time.Hour, OrphanAge: 3 * time.Minute}
}

// GCReport is what one collection removed.
type GCReport struct {
	Removed      []string `json:"removed"`       // worker ids whose records (and logs, cgroups) were removed
	LedgerPruned int      `json:"ledger_pruned"` // ledger records removed
	// TempsRemoved counts the temp files of dead writers removed from the worker and ledger directories
	// (state.Dir.SweepTemps: a writer killed between its temp file and the rename leaves one).
	TempsRemoved int `json:"temps_removed"`
	// Quarantined are the ids of damaged records (Damaged) moved into <state-dir>/quarantine; a damaged
	// record that names a key stays in place. QuarantineDropped counts the oldest quarantined records
	// removed to keep QuarantineKeep.
	Quarantined       []string `json:"quarantined"`
	QuarantineDropped int      `json:"quarantine_dropped"`
}

// GC applies r in one pass: the records of ended workers beyond it, with their exit records, the logs
// hlaunch made for them and their empty cgroups; empty worker cgroups no record names; the cgroup parent
// once empty; the ledger records beyond its bound; and the temp files of writers that died mid-write
// (sweepTemps: state.Dir.SweepTemps' rule, at most once a minute). Running workers, and workers whose
// identity does not verify, are never touched (they are shown, never removed). It is safe beside a live
// sidecar and another gc: a record removed meanwhile is skipped. A record that cannot be read or verified
// is never deleted: it is moved into <state-dir>/quarantine (records.QuarantineDamaged).
func (l *Launcher) GC(ctx context.Context, r Retention) (GCReport, error) {
	var rep GCReport
	recs, err := l.List(ctx)
	if err != nil {
		return rep, err
	}
	var ended []worker.Record
	for _, rec := range recs {
		if rec.State == fingerprint.Exited {
			ended = append(ended, rec)
		}
	}
	// Most recently ended first; an end not recorded (a killed shim) counts as its start.
	slices.SortStableFunc(ended, func(a, b worker.Record) int { return strings.Compare(endOf(b), endOf(a)) })
	cutoff := ""
	if r.MaxAge > 0 {
		cutoff = time.Now().Add(-r.MaxAge).UTC().Format(time.RFC3339Nano)
	}
	d := &state.Dir{Path: l.WorkersDir()}
	for i, rec := range ended {
		// An ended worker's empty cgroup goes whether or not its record is kept: its shim removes it, but a
		// shim killed with its tree (or by a worker of the launcher's uid) could not.
		if !l.removeEndedCgroup(rec) {
			continue // members left: not over after all
		}
		if i < r.Keep && (cutoff == "" || endOf(rec) >= cutoff) {
			continue
		}
		l.removeOwnLog(rec.Log)
		_ = d.Remove(rec.ID + ".exit")
		_ = os.Remove(records.WorkerLock(d.Path, rec.ID)) // an ended worker's: nothing signals it any more
		_ = d.Remove(records.LogPosName(rec.ID))
		if err := d.Remove(rec.ID); err != nil {
			return rep, err
		}
		l.Unindex(rec.Receipt)
		rep.Removed = append(rep.Removed, rec.ID)
	}
	// Empty worker cgroups without a record (a foreground hlaunch that was SIGKILLed could not remove its own).
	rep.Removed = append(rep.Removed, l.gcOrphans(recs, r.OrphanAge)...)
	// The parent itself goes too once nothing is left under it (it is re-created by the next launch).
	if l.Cgroups != nil && !r.KeepParent {
		_ = l.Cgroups.RemoveParentIfEmpty(l.cfg.Defaults.CgroupParent)
	}
	rep.LedgerPruned = l.PruneLedger(r.LedgerKeep, r.LedgerMaxAge)
	rep.Quarantined, rep.QuarantineDropped, err = l.QuarantineDamaged(recs)
	n, serr := l.sweepTemps()
	rep.TempsRemoved = n
	return rep, errors.Join(err, serr) // a quarantine that failed does not keep the sweep from running
}

// tempSweep is when a Launcher last swept its directories for dead writers' temp files.
type tempSweep struct {
	mu sync.Mutex
	at time.Time // zero: never (`hlaunch gc`, a fresh launcher, sweeps at its one pass)
}

// tempSweepEvery is how often a Launcher that collects again and again (the sidecar, every --gc-interval)
// sweeps: the sweep reads both directories in full (the ledger's 10,000 names), which the collection
// otherwise avoids (records.Store.PruneLedger), and a temp file is not taken for a dead writer's before it is a minute
// old anyway (state's grace): a dead writer's temp file goes within two minutes.
const tempSweepEvery = time.Minute

// sweepTemps removes the temp files of dead writers in the worker and ledger directories, at most once
// every tempSweepEvery, and returns how many went.
func (l *Launcher) sweepTemps() (int, error) {
	s := &l.tempSweep
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && time.Since(s.at) < tempSweepEvery {
		return 0, nil
	}
	s.at = time.Now()
	n := 0
	for _, dir := range []string{l.WorkersDir(), l.LedgerPath} {
		k, err := (&state.Dir{Path: dir}).SweepTemps()
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// removeEndedCgroup is removeEnded for a pass over kept records, after one stat (most are gone): it reports false
// only when the cgroup is there with members.
func (l *Launcher) removeEndedCgroup(rec worker.Record) bool {
	if rec.Mode != worker.ModeCgroup || rec.Cgroup == "" || l.Cgroups == nil || l.Cgroups.Unified == "" {
		return true
	}
	if _, err := os.Lstat(filepath.Join(l.Cgroups.Unified, rec.Cgroup)); err != nil {
		return true // removed (by its shim, as usual): one stat per kept record and pass
	}
	ident, err := fingerprint.ParseToken(rec.Token)
	if err != nil {
		return true
	}
	return l.removeEnded(rec.Receipt, ident)
}

// endOf is when a record's worker ended, else when it started (RFC 3339 UTC strings sort by time).
func endOf(r worker.Record) string {
	if r.EndedAt != "" {
		return r.EndedAt
	}
	return r.StartedAt
}

// removeOwnLog removes a worker's log and its rotated copy when hlaunch made it (<state-dir>/logs); a log
// the caller named (--log) is the caller's.
func (l *Launcher) removeOwnLog(log string) {
	if log == "" || filepath.Dir(log) != filepath.Join(l.StatePath, "logs") {
		return
	}
	_ = os.Remove(log)
	_ = os.Remove(log + ".1")
}

// gcOrphans removes empty worker cgroups under the default parent that no record names.
func (l *Launcher) gcOrphans(recs []worker.Record, minAge time.Duration) []string {
	if l.Cgroups == nil || l.Cgroups.Unified == "" {
		return nil
	}
	parent, err := l.Cgroups.CleanParent(l.cfg.Defaults.CgroupParent)
	if err != nil {
		return nil
	}
	known := map[string]bool{}
	for _, r := range recs {
		known[r.Cgroup] = true
	}
	ents, err := os.ReadDir(filepath.Join(l.Cgroups.Unified, parent))
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range ents {
		path := parent + "/" + e.Name()
		if !e.IsDir() || !worker.IsID(e.Name()) || known[path] {
			continue
		}
		// A cgroup made for a launch in flight is empty and unrecorded too, until its shim or target runs in
		// it: only one older than minAge (Retention.OrphanAge) is an orphan (the sidecar collects while it spawns).
		if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < minAge {
			continue
		}
		g, err := l.Cgroups.Hold(cgroup.Claim{Path: path, Worker: e.Name()})
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
