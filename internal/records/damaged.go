package records

import (
	"errors"
	"fmt"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// DamagedError is load's error for a record that cannot be read or verified. It is ErrRefused: there is no
// identity to verify, so nothing is ever signalled on its word.
type DamagedError struct {
	id    string
	state fingerprint.State
	err   error
	// key is the --key a record that decoded names (it cannot be proven not to hold it); a record that does
	// not decode names nothing.
	key string
	// lasting says the damage is the record's own (state.ErrDamaged, a bad token or id), not a failure of
	// the moment such as EMFILE or EIO: only such a record is quarantined.
	lasting bool
}

// Error says which record is damaged, its state and why.
func (e *DamagedError) Error() string {
	return fmt.Sprintf("%v: worker %s: record is %s: %v", worker.ErrRefused, e.id, e.state, e.err)
}

// Is makes a damaged record ErrRefused.
func (e *DamagedError) Is(target error) bool { return target == worker.ErrRefused }

// Unwrap is the read or decode error.
func (e *DamagedError) Unwrap() error { return e.err }

// CheckRecord is load's judgement of the record rc read from <id>.json (readErr: the read's error, not
// ErrNotFound): its identity, or a *DamagedError. A token of an unknown version is judged before the id, as a
// newer format may spell the rest differently.
func CheckRecord(id string, rc worker.Receipt, readErr error) (fingerprint.Identity, error) {
	if readErr != nil {
		return fingerprint.Identity{}, &DamagedError{id: id, state: worker.StateCorrupt, err: readErr, lasting: errors.Is(readErr, state.ErrDamaged)}
	}
	ident, err := fingerprint.ParseToken(rc.Token)
	switch {
	case errors.Is(err, fingerprint.ErrUnknownVersion):
		return fingerprint.Identity{}, &DamagedError{id: id, state: worker.StateUnknownVersion, err: err, key: rc.Key, lasting: true}
	case rc.ID != id:
		// The id names files beside the record (<id>.exit, the ledger's): it must be the file's own.
		return fingerprint.Identity{}, &DamagedError{id: id, state: worker.StateCorrupt, err: fmt.Errorf("%w: record names worker id %q", worker.ErrInvalid, rc.ID), key: rc.Key, lasting: true}
	case err != nil:
		return fingerprint.Identity{}, &DamagedError{id: id, state: worker.StateCorrupt, err: err, key: rc.Key, lasting: true}
	}
	return ident, nil
}

// DamagedRecord is what List, Get and Status show of a damaged record: its id, the key it names, its state
// and why. Nothing else of it is shown: none of it is verified.
func DamagedRecord(e *DamagedError) worker.Record {
	reason := "its record cannot be read or verified: never signalled; hlaunch gc quarantines it"
	switch {
	case e.key != "":
		reason = "its record cannot be read or verified: never signalled; it blocks its key, and hlaunch gc leaves it"
	case !e.lasting:
		reason = "its record cannot be read now: never signalled; read again at the next pass"
	}
	return worker.Record{Receipt: worker.Receipt{ID: e.id, Key: e.key}, State: e.state, Reason: reason, RecordError: e.err.Error()}
}
