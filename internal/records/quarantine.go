package records

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// QuarantineKeep is how many damaged records <state-dir>/quarantine keeps: past it, the oldest quarantined
// go, so that whatever can write records there cannot fill the disk through the quarantine.
const QuarantineKeep = 100

// QuarantineDir holds the damaged records gc moved out of the worker directory.
func (l *Store) QuarantineDir() string { return filepath.Join(l.StatePath, "quarantine") }

// QuarantineDamaged moves every record of recs that is damaged for good (DamagedError.lasting) and names
// no key into the quarantine, and bounds it (QuarantineKeep). It returns the ids moved and how many old
// quarantined entries were removed. A damaged record that names a key stays where it is: moving it would
// Free a key its worker may hold. One that could not be read for a reason of the moment stays too.
func (l *Store) QuarantineDamaged(recs []worker.Record) (moved []string, dropped int, err error) {
	for _, rec := range recs {
		if !worker.Damaged(rec.State) || rec.Key != "" {
			continue
		}
		_, _, lerr := l.Load(rec.ID) // read again now: the record may have been rewritten, or be gone
		var de *DamagedError
		if !errors.As(lerr, &de) || !de.lasting || de.key != "" {
			continue
		}
		ok, err := l.quarantine(rec.ID)
		if err != nil {
			return moved, dropped, err
		}
		if ok {
			moved = append(moved, rec.ID)
		}
	}
	if len(moved) == 0 {
		return nil, 0, nil
	}
	dropped, err = l.boundQuarantine(QuarantineKeep)
	return moved, dropped, err
}

// quarantine renames <id>.json (whatever it is: a file, a directory, a link) and its exit record, when
// there is one, into the quarantine as <UTC time>-<id>.json. It reports false when the record was gone.
func (l *Store) quarantine(id string) (bool, error) {
	q, err := state.Open(l.QuarantineDir())
	if err != nil {
		return false, fmt.Errorf("quarantine: %w", err)
	}
	stamp := time.Now().UTC().Format("20060102T150405.000000000Z")
	for _, name := range []string{id + ".json", id + ".exit.json"} {
		err := os.Rename(filepath.Join(l.WorkersDir(), name), filepath.Join(q.Path, stamp+"-"+name))
		switch {
		case errors.Is(err, fs.ErrNotExist) && name == id+".json":
			return false, nil // removed meanwhile (another gc)
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return false, fmt.Errorf("quarantine %s: %w", id, err)
		}
	}
	return true, nil
}

// boundQuarantine removes the oldest quarantined entries past keep (their names start with the time they
// were quarantined) and returns how many went.
func (l *Store) boundQuarantine(keep int) (int, error) {
	ents, err := os.ReadDir(l.QuarantineDir())
	if err != nil {
		return 0, fmt.Errorf("quarantine: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); !strings.HasSuffix(n, ".exit.json") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	n := 0
	for len(names)-n > keep {
		old := names[n]
		if err := os.RemoveAll(filepath.Join(l.QuarantineDir(), old)); err != nil {
			return n, fmt.Errorf("quarantine: %w", err)
		}
		_ = os.Remove(filepath.Join(l.QuarantineDir(), strings.TrimSuffix(old, ".json")+".exit.json"))
		n++
	}
	return n, nil
}
