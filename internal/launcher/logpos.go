package launcher

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

// logPosName names a worker's position record: logpos-<id>. It does not start with the worker's id, so
// that nothing that counts or lists a worker's records by its id takes it for one.
func logPosName(id string) string { return "logpos-" + id }

// logPos is the position record: the log's current file first, then the rotated one (<log>.1), if any.
type logPos struct {
	Files []logFilePos `json:"files"`
}

// logFilePos is one file of a log: its inode and the offset of its first byte in the worker's output.
type logFilePos struct {
	Ino  uint64 `json:"ino"`
	Base int64  `json:"base"`
}

func inoOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// movePos records that the log's current file is now the file ino: the file before it (prevSize bytes
// long) becomes the rotated one, and the new file starts where it ended. A reopen of the same file
// changes nothing.
func (c *logCopy) movePos(ino uint64, prevSize int64) {
	if len(c.pos.Files) > 0 && c.pos.Files[0].Ino == ino {
		return
	}
	var base int64
	if len(c.pos.Files) > 0 {
		base = c.pos.Files[0].Base + prevSize
		c.pos.Files = []logFilePos{{Ino: ino, Base: base}, c.pos.Files[0]}
	} else {
		c.pos.Files = []logFilePos{{Ino: ino, Base: base}}
	}
	if c.onPos != nil {
		c.onPos(c.pos)
	}
}

// logPosWriter writes a worker's position record into its state directory (durably: a reader after a
// crash must not find a file's inode missing).
func logPosWriter(workers, id string) func(logPos) {
	return func(p logPos) {
		if d, err := state.Open(workers); err == nil {
			_ = d.Write(logPosName(id), p, true)
		}
	}
}
