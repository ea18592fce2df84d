//go:build hlaunchcover

package coverdir

import (
	"os"
	"path/filepath"
	"runtime/coverage"
	"syscall"

	"golang.org/x/sys/unix"
)

// dir is where this cover build's processes write their counters, set at link time
// (-X github.com/hlaunch/hlaunch/internal/coverdir.dir=...).
var dir string

// init names the directory for the coverage runtime, which reads GOCOVERDIR in main's init (a program) or
// at exit (a test binary), both after this package's init. A GOCOVERDIR the process was given wins.
func init() {
	if dir != "" && os.Getenv("GOCOVERDIR") == "" {
		_ = os.Setenv("GOCOVERDIR", dir)
	}
}

// Counters is a role's counters file, opened before the role gives up its file access.
type Counters struct {
	f *os.File
}

// Open writes this process's counters so far into $GOCOVERDIR and keeps that file open, so that Flush can
// overwrite it later from inside a sandbox, as another uid, or under Landlock. It returns nil when the
// binary is a test binary (its coverage runtime has no counters to write before it exits) or on any
// failure: coverage is then only what the exit hook writes.
func Open() *Counters {
	out := os.Getenv("GOCOVERDIR")
	if out == "" {
		return nil
	}
	// The runtime names the file (covcounters.<meta hash>.<pid>.<time>); a private directory shows which.
	tmp, err := os.MkdirTemp(out, ".role-")
	if err != nil {
		return nil
	}
	defer os.RemoveAll(tmp)
	if err := coverage.WriteCountersDir(tmp); err != nil {
		return nil
	}
	ents, err := os.ReadDir(tmp)
	if err != nil || len(ents) != 1 {
		return nil
	}
	name := ents[0].Name()
	if err := os.Rename(filepath.Join(tmp, name), filepath.Join(out, name)); err != nil {
		return nil
	}
	if f := openDetached(out, name); f != nil {
		return &Counters{f: f}
	}
	f, err := os.OpenFile(filepath.Join(out, name), os.O_WRONLY, 0)
	if err != nil {
		return nil
	}
	return &Counters{f: f}
}

// openDetached opens dir/name for writing through a detached clone of dir's mount, when this process may
// clone it (a sandboxed stub may, in its own mount namespace). A file open for writing on a mount of the
// view would make the sandbox's read-only pass fail (mount_setattr: EBUSY); the clone is not in the view.
func openDetached(dir, name string) *os.File {
	tree, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return nil
	}
	defer unix.Close(tree)
	fd, err := unix.Openat(tree, name, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, name))
}

// Flush overwrites the counters file with the counters so far (they only grow, and so does the file).
func (c *Counters) Flush() {
	if c == nil {
		return
	}
	if _, err := c.f.Seek(0, 0); err != nil {
		return
	}
	if err := coverage.WriteCounters(c.f); err != nil {
		return
	}
	if end, err := c.f.Seek(0, 1); err == nil {
		_ = c.f.Truncate(end)
	}
}

// Exit flushes the counters and ends the process with code. It skips os.Exit's hooks: the coverage
// runtime's own would write to $GOCOVERDIR by path, which a sandboxed stub no longer sees, and say so on
// the worker's stderr.
func (c *Counters) Exit(code int) {
	if c == nil {
		os.Exit(code)
	}
	c.Flush()
	syscall.Exit(code)
}
