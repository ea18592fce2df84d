package records

import (
	"errors"
	"fmt"
	"os"

	"github.com/hlaunch/hlaunch/internal/worker"
	"golang.org/x/sys/unix"
)

// The state filesystem is shared: every worker's records, the ledger and (by default) the workers' logs
// are on it, often a small tmpfs (a root sidecar's /run/hlaunch). Log output must never take the space a
// running worker's end record needs, nor a new spawn the space a running worker ends with. So there are
// two floors, both measured by statfs on the filesystem itself (what the writer may use: all free blocks
// for root, the unreserved ones for anyone else):
//
//   - a worker's shim stops writing its log (and counts the output as dropped) while the log's filesystem
//     has less than RecordReserve free;
//   - a detached spawn is refused (ErrNoSpace) while the state or ledger directory's filesystem has less
//     than half of it free.
//
// What is below both floors is for the end records of the workers that run: a worker's records are a
// few KiB (a tmpfs gives each file at least one 4 KiB page: its record, its exit record and its ledger
// record take 12 KiB, plus a temp file while one is written), so half of 4 MiB holds the ends of more
// than a hundred running workers.

// RecordReserve is the free space a worker log's filesystem keeps for records: 4 MiB, or 1/16 of the
// filesystem when that is smaller (a tiny filesystem still gets most of its space for logs).
const RecordReserve = 4 << 20

// fsSpace is a filesystem's free space for this process and its reserve for records, in bytes.
type fsSpace struct {
	Free, Reserve uint64
}

// SpaceOf reads fsSpace from a statfs result.
func SpaceOf(st *unix.Statfs_t) fsSpace {
	unit := uint64(st.Frsize)
	if unit == 0 {
		unit = uint64(st.Bsize)
	}
	free := st.Bavail
	if os.Geteuid() == 0 {
		free = st.Bfree // root writes into the blocks kept for it
	}
	return fsSpace{Free: free * unit, Reserve: min(RecordReserve, st.Blocks*unit/16)}
}

// CheckRecordSpace refuses a spawn whose records' directory dir (what names it: "state directory",
// "ledger directory") has less than half the record reserve free: that space is the running workers'.
func CheckRecordSpace(what, dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // the directory's own open reports what is wrong with it
	}
	if s := SpaceOf(&st); s.Free < s.Reserve/2 {
		return fmt.Errorf("%w: %s %s: %s free, less than the %s kept for running workers' records (free space there, or name another with --state-dir / --ledger-dir)",
			worker.ErrNoSpace, what, dir, SizeText(s.Free), SizeText(s.Reserve/2))
	}
	return nil
}

// NoSpace reports whether err is a write that failed for want of space (ENOSPC, EDQUOT).
func NoSpace(err error) bool { return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) }

// WriteError words err, a failed write of one of the sidecar's own files in dir beside the records (what
// names it: "peer uid", "idempotency key"): one for want of space is worker.ErrNoSpace (503 no_space, the
// spawn refused, nothing started), as a launch's records are; any other is what, then err.
func WriteError(what, dir string, err error) error {
	if NoSpace(err) {
		return fmt.Errorf("%w: %s in %s: %w (free space there, or name another with --state-dir)", worker.ErrNoSpace, what, dir, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// SizeText words n bytes for a message: "512 KiB", "3 MiB".
func SizeText(n uint64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
