package records

import (
	"os"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/state"
)

// A detached worker's log is read back by offsets that count from the first byte its log held when its
// shim opened it, across rotations (LogReader). Which offset each file starts at is the shim's to say: it
// records the files by inode in the worker's position record (logpos-<id> in the state directory),
// synchronously, after it opens a new file and before it writes into it, so that a reader that finds a
// file's inode in the record knows where that file starts, and one that does not is looking at a file
// whose rotation is in progress (it looks again).

// LogPosName names a worker's position record: logpos-<id>. It does not start with the worker's id, so
// that nothing that counts or lists a worker's records by its id takes it for one.
func LogPosName(id string) string { return "logpos-" + id }

// LogPos is the position record: the log's current file first, then the rotated one (<log>.1), if any.
type LogPos struct {
	Files []LogFilePos `json:"files"`
}

// LogFilePos is one file of a log: its inode and the offset of its first byte in the worker's output.
type LogFilePos struct {
	Ino  uint64 `json:"ino"`
	Base int64  `json:"base"`
}

// InoOf is fi's inode number, 0 when fi has none.
func InoOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// LogPosWriter writes a worker's position record into its state directory (durably: a reader after a
// crash must not find a file's inode missing).
func LogPosWriter(workers, id string) func(LogPos) {
	return func(p LogPos) {
		if d, err := state.Open(workers); err == nil {
			_ = d.Write(LogPosName(id), p, true)
		}
	}
}
