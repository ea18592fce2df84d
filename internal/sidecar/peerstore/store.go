package peerstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/sidecar/peerlimit"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Store remembers which peer uid asked for each worker this sidecar spawned, while the worker may
// run: one file per worker in dir (0700), named by the worker's id and holding the uid in decimal, written
// before the launch and removed when the worker's slot of --max-workers is given back. A sidecar that
// restarts adopts a running worker into its peer's share again, so a restart does not give a peer a new
// share of running workers. A file that is lost or unreadable leaves its worker in peerlimit.AdoptedUID's bucket.
type Store struct {
	dir string
}

// Open opens (making it 0700) dir.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("peer uids: %w", err)
	}
	return &Store{dir: dir}, nil
}

// Put remembers that uid asked for worker id: a temp file renamed to the id, so that a crash leaves no
// half-written uid under it.
func (p *Store) Put(id string, uid uint32) error {
	if !worker.IsID(id) {
		return fmt.Errorf("peer uid of %q: not a worker id", id)
	}
	if err := records.CheckRecordSpace("state directory", filepath.Dir(p.dir)); err != nil {
		return err // the spawn is refused (no_space) as the launch itself would refuse it
	}
	tmp, err := os.CreateTemp(p.dir, ".tmp-")
	if err != nil {
		return records.WriteError("peer uid", p.dir, err)
	}
	_, err = tmp.WriteString(strconv.FormatUint(uint64(uid), 10))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(p.dir, id))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return records.WriteError("peer uid", p.dir, err)
	}
	return nil
}

// Get returns the uid that asked for worker id, when one is remembered.
func (p *Store) Get(id string) (uint32, bool) {
	if !worker.IsID(id) {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(p.dir, id))
	if err != nil {
		return 0, false
	}
	uid, err := strconv.ParseUint(string(b), 10, 32)
	if err != nil || uint32(uid) == peerlimit.AdoptedUID || uint32(uid) == peerlimit.UnknownUID {
		return 0, false
	}
	return uint32(uid), true
}

// Forget drops worker id's uid.
func (p *Store) Forget(id string) {
	if worker.IsID(id) {
		_ = os.Remove(filepath.Join(p.dir, id))
	}
}

// Sweep drops every file but those of the workers keep names (and temp files of a write that did not
// finish): a worker that ended while no sidecar ran, or a launch that a crash cut short.
func (p *Store) Sweep(keep func(id string) bool) error {
	ents, err := os.ReadDir(p.dir)
	if err != nil {
		return fmt.Errorf("peer uids: %w", err)
	}
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, ".") && worker.IsID(name) && keep(name) {
			continue
		}
		if err := os.Remove(filepath.Join(p.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
