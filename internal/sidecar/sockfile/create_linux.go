package sockfile

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var (
	// ErrInUse: another process already serves the socket path.
	ErrInUse = errors.New("socket is in use by a live server")
	// ErrNotSocket: the socket path exists and is not a socket; it is never replaced.
	ErrNotSocket = errors.New("socket path exists and is not a socket")
)

// Create binds path with mode (and group gid when >= 0) without any window in which the socket exists
// with looser permissions: it binds inside a fresh 0700 directory next to path, fixes mode and group there,
// then renames the socket into place. A live server already on path is an error (ErrInUse); a stale socket
// file is replaced; anything that is not a socket is never touched (ErrNotSocket).
//
// The fresh directory is held by a descriptor, checked to be the one this process made (its owner, 0700),
// and everything inside it - the bind, the mode, the group, the rename - goes through that descriptor:
// in a socket directory another uid may write, that uid can rename the fresh directory away and put one of
// its own under the name, and a chmod and chown by path then followed the link it left there as "s" (a
// root sidecar made /etc/shadow 0660 and of the socket group).
func Create(path string, mode os.FileMode, gid int) (net.Listener, func(), error) {
	path = filepath.Clean(path)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, nil, &os.PathError{Op: "listen", Path: path, Err: ErrNotSocket}
		}
		if liveServer(path) {
			return nil, nil, &os.PathError{Op: "listen", Path: path, Err: ErrInUse}
		}
	}
	tmpDir, err := os.MkdirTemp(dir, ".hls")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmpDir)
	dfd, err := unix.Open(tmpDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: tmpDir, Err: err}
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return nil, nil, &os.PathError{Op: "fstat", Path: tmpDir, Err: err}
	}
	if st.Uid != uint32(os.Geteuid()) || st.Mode&0o7777 != 0o700 {
		return nil, nil, fmt.Errorf("listen %s: the directory %s made to bind the socket in was replaced (owner uid %d, mode %04o): another uid may write %s", path, tmpDir, st.Uid, st.Mode&0o7777, dir)
	}
	// The bind resolves through the descriptor's magic link: into the directory checked above.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: fmt.Sprintf("/proc/self/fd/%d/s", dfd), Net: "unix"})
	if err != nil {
		return nil, nil, err
	}
	// The listener must not unlink its bind name on Close (that name is gone after the rename); cleanup
	// removes the final path, and only if it is still this socket.
	ln.SetUnlinkOnClose(false)
	fail := func(err error) (net.Listener, func(), error) {
		ln.Close()
		return nil, nil, err
	}
	// Nobody else can make an entry in the 0700 directory: "s" is the socket just bound.
	if err := unix.Fchmodat(dfd, "s", uint32(mode.Perm()), 0); err != nil {
		return fail(&os.PathError{Op: "chmod", Path: filepath.Join(tmpDir, "s"), Err: err})
	}
	if gid >= 0 {
		if err := unix.Fchownat(dfd, "s", -1, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fail(&os.PathError{Op: "chown", Path: filepath.Join(tmpDir, "s"), Err: err})
		}
	}
	if err := unix.Renameat(dfd, "s", unix.AT_FDCWD, path); err != nil {
		return fail(&os.LinkError{Op: "rename", Old: filepath.Join(tmpDir, "s"), New: path, Err: err})
	}
	mine, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	cleanup := func() {
		ln.Close()
		if fi, err := os.Lstat(path); err == nil && sameInode(fi, mine) {
			os.Remove(path)
		}
	}
	return namedListener{ln, &net.UnixAddr{Name: path, Net: "unix"}}, cleanup, nil
}

// namedListener is a listener bound under one name and renamed to another: Addr is where it now is.
type namedListener struct {
	*net.UnixListener
	addr net.Addr
}

// Addr is the socket's path after the rename.
func (l namedListener) Addr() net.Addr { return l.addr }

// liveServer reports whether an HTTP server answers on path. A successful connect is not enough: a crashed
// sidecar's listening socket can outlive it for a moment in a child caught between fork and exec, and the
// kernel then completes connects that nobody will ever answer.
func liveServer(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, "GET /v1/health HTTP/1.1\r\nHost: sidecar\r\nConnection: close\r\n\r\n"); err != nil {
		return false
	}
	buf := make([]byte, 5)
	_, err = io.ReadFull(c, buf)
	return err == nil && string(buf) == "HTTP/"
}

func sameInode(a, b os.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}
