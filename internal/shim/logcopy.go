package shim

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/workerlog"
	"golang.org/x/sys/unix"
)

// A detached worker with a log writes into a pipe, never into the file: its shim reads the pipe and
// writes the log, rotating it at its size limit (one old file, <log>.1) while the worker runs, so that
// the log never grows past about twice that limit. The shim holds one chunk of output at a time: a worker
// that writes faster than the shim copies blocks in its write (the pipe is full), and a chunk the log
// cannot take (a write error, or the filesystem below its RecordReserve) is dropped and counted.

// logChunk is the most output the shim holds at a time: one pipe's default capacity.
const logChunk = 64 << 10

// logPublishEvery is the most often a running worker's record is rewritten with its log's figures.
const logPublishEvery = time.Second

// logDrainMax bounds how long a shim keeps reading its worker's output after the worker's tree has ended:
// a process outside the tree (one the worker handed its stdout) may hold the pipe open for ever.
const logDrainMax = 2 * time.Second

// logCopy is the shim's copy of its worker's output into the log.
type logCopy struct {
	path string
	max  int64
	r    *os.File // the pipe's read end
	f    *os.File // the log; nil after a rotation that could not reopen it
	size int64
	st   records.LogStats
	done chan struct{}
	// updates holds the latest figures worth publishing (after a rotation, or when output starts being
	// dropped): one slot, replaced, written only by the copy.
	updates  chan records.LogStats
	dropping bool
	// pos is where each file of the log starts in the worker's output (internal/records/logpos.go); onPos, when set, is
	// told it after every open of a new file, before anything is written into it.
	pos   records.LogPos
	onPos func(records.LogPos)
}

// startLogCopy opens the log at path (rotated at max bytes, 0: workerlog.RotateSize) and a pipe, and starts
// copying what the pipe's write end receives into the log. The write end is the worker's stdout and
// stderr; the caller closes its own copy once the worker has it. onPos (nil: none) is told where the
// log's files start in the worker's output (internal/records/logpos.go): now, and after each rotation
// before anything is written into the new file.
func startLogCopy(path string, max int64, onPos func(records.LogPos)) (*logCopy, *os.File, error) {
	if max <= 0 {
		max = workerlog.RotateSize
	}
	f, err := workerlog.Open(path, max)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("--log: %w", err)
	}
	r, w, err := logPipe()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("--log: %w", err)
	}
	c := &logCopy{path: path, max: max, r: r, f: f, size: st.Size(), done: make(chan struct{}), updates: make(chan records.LogStats, 1)}
	c.pos = records.LogPos{Files: []records.LogFilePos{{Ino: records.InoOf(st), Base: 0}}}
	c.onPos = onPos
	if onPos != nil {
		onPos(c.pos)
	}
	go c.run()
	return c, w, nil
}

// logPipe makes the pipe: its write end blocking (the worker's stdout and stderr: a full pipe blocks the
// worker's write, never fails it with EAGAIN), its read end non-blocking, so that the runtime's poller
// holds it and a Close ends a blocked Read.
func logPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(p[0]), "log pipe"), os.NewFile(uintptr(p[1]), "log pipe"), nil
}

func (c *logCopy) run() {
	defer close(c.done)
	buf := make([]byte, logChunk)
	for {
		n, err := c.r.Read(buf)
		if n > 0 {
			c.write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// write puts one chunk into the log, rotating it first when it has reached its limit, or drops it.
func (c *logCopy) write(b []byte) {
	if c.f == nil || c.size >= c.max {
		c.rotate()
	}
	if c.f == nil {
		c.drop(len(b), errors.New("the log could not be reopened after its rotation"))
		return
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(int(c.f.Fd()), &fs); err == nil {
		if s := records.SpaceOf(&fs); s.Free < s.Reserve+uint64(len(b)) {
			c.drop(len(b), fmt.Errorf("%s: its filesystem has %s free, the %s kept for records", c.path, records.SizeText(s.Free), records.SizeText(s.Reserve)))
			return
		}
	}
	n, err := c.f.Write(b)
	c.size += int64(n)
	c.st.Bytes += int64(n)
	if err != nil {
		c.drop(len(b)-n, err)
		return
	}
	c.dropping = false
}

// rotate closes the log and opens it again through workerlog.Open, which renames a full log to <log>.1 (through
// no symbolic link, as at the launch) and creates a new one.
func (c *logCopy) rotate() {
	full := c.f != nil && c.size >= c.max
	prevSize := c.size
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
	f, err := workerlog.Open(c.path, c.max)
	if err != nil {
		c.setError(err)
		return
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		c.setError(err)
		return
	}
	c.f, c.size = f, st.Size()
	c.movePos(records.InoOf(st), prevSize)
	if full {
		c.st.Rotations++
		c.changed()
	}
}

func (c *logCopy) drop(n int, why error) {
	c.st.Dropped += int64(n)
	c.setError(why)
	if !c.dropping {
		c.dropping = true
		c.changed()
	}
}

// changed offers the figures to publish, replacing figures not yet taken; it never blocks (the copy is
// the only sender, and it empties the slot first).
func (c *logCopy) changed() {
	select {
	case <-c.updates:
	default:
	}
	c.updates <- c.st
}

// publish calls write with the copy's figures when they change, at most once every logPublishEvery (the
// latest figures are written when the interval has passed), until the returned stop is called: stop
// returns once no write is in progress and none will follow.
func (c *logCopy) publish(write func(records.LogStats)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var last time.Time
		for {
			var st records.LogStats
			select {
			case <-quit:
				return
			case st = <-c.updates:
			}
			if wait := time.Until(last.Add(logPublishEvery)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-quit:
					t.Stop()
					return
				case <-t.C:
				}
				select {
				case st = <-c.updates: // newer figures came meanwhile
				default:
				}
			}
			write(st)
			last = time.Now()
		}
	}()
	return func() { close(quit); <-done }
}

func (c *logCopy) setError(err error) {
	if c.st.Error == "" {
		c.st.Error = err.Error()
	}
}

// stop waits for the copy to end (the worker's output has reached EOF: every writer is gone), or for
// logDrainMax, and returns what it did. The log is closed.
func (c *logCopy) stop() records.LogStats {
	t := time.NewTimer(logDrainMax)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.r.Close() // ends the blocked read
		<-c.done
	}
	c.r.Close()
	if c.f != nil {
		c.f.Close()
	}
	return c.st
}

// abort ends a copy whose worker never started.
func (c *logCopy) abort() {
	c.r.Close()
	<-c.done
	if c.f != nil {
		c.f.Close()
	}
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
		c.pos.Files = []records.LogFilePos{{Ino: ino, Base: base}, c.pos.Files[0]}
	} else {
		c.pos.Files = []records.LogFilePos{{Ino: ino, Base: base}}
	}
	if c.onPos != nil {
		c.onPos(c.pos)
	}
}
