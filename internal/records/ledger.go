package records

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// LedgerQuery selects ledger records; zero fields select everything.
type LedgerQuery struct {
	Key   string
	Since time.Time
}

// WriteLedger stores rec as the execution's ledger record in dir.
func WriteLedger(dir string, rec worker.Record) error {
	d, err := state.Open(dir)
	if err != nil {
		return err
	}
	return d.Write(rec.ID, rec, true)
}

// FinishLedger completes an execution's ledger record with how it ended. The worker record's exit file
// holds the same facts: a caller that cannot write the ledger says so there (ledger_error).
func FinishLedger(dir, id string, ex ExitRecord) error {
	d := &state.Dir{Path: dir}
	var rec worker.Record
	if err := d.Read(id, &rec); errors.Is(err, state.ErrNotFound) {
		return nil // pruned, or never written: there is no record to complete
	} else if err != nil {
		return fmt.Errorf("ledger directory %s: %w", dir, err)
	}
	ApplyExit(&rec, ex)
	rec.State = fingerprint.Exited
	if err := d.Write(id, rec, true); err != nil {
		return fmt.Errorf("ledger directory %s: %w", dir, err)
	}
	return nil
}

// Ledger returns the execution records that match q, oldest first. A record whose worker has not ended is
// verified now: one from before a reboot says foreign-boot, never running. A cancelled ctx ends the read
// between two records: Ledger then returns ctx's error (wrapped) and no records.
func (l *Store) Ledger(ctx context.Context, q LedgerQuery) ([]worker.Record, error) {
	d, err := state.Open(l.LedgerPath)
	if err != nil {
		return nil, err
	}
	ids, err := d.Names("w-")
	if err != nil {
		return nil, err
	}
	var out []worker.Record
	var src fingerprint.Sources // the pass's (sources), made for the first record that is verified
	pinned := false
	for _, id := range ids {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ledger: %w", context.Cause(ctx))
		}
		var rec worker.Record
		if err := d.Read(id, &rec); errors.Is(err, state.ErrNotFound) {
			continue // pruned since the listing (retention, a concurrent gc)
		} else if err != nil {
			return nil, err
		}
		if q.Key != "" && rec.Key != q.Key {
			continue
		}
		if !q.Since.IsZero() {
			if t, err := time.Parse(time.RFC3339Nano, rec.StartedAt); err == nil && t.Before(q.Since) {
				continue
			}
		}
		if rec.EndedAt == "" {
			ident, err := fingerprint.ParseToken(rec.Token)
			if err != nil {
				return nil, fmt.Errorf("ledger record %s: %w", id, err)
			}
			if !pinned {
				src, pinned = l.Sources(), true
			}
			v, err := fingerprint.Verify(src, ident)
			if err != nil {
				return nil, fmt.Errorf("ledger record %s: %w", id, err)
			}
			rec.State, rec.Reason = v.State, v.Reason
		}
		out = append(out, rec)
	}
	slices.SortStableFunc(out, func(a, b worker.Record) int { return strings.Compare(a.StartedAt, b.StartedAt) })
	return out, nil
}
