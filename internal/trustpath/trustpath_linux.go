package trustpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// maxLinks bounds the symbolic links one walk follows, as the kernel's own path walk does (ELOOP).
const maxLinks = 40

// Untrusted is a component of a checked path that a worker of UID must not be given: its owner is
// neither root nor UID, or its group or others may write it (and it is not a root-owned sticky
// directory), or it does not exist in a directory others may write (a root-owned sticky one: anyone
// may create it there after the check).
type Untrusted struct {
	// Dir is the component at fault (an ancestor of the checked path, or the path itself).
	Dir string
	// Missing says that Dir does not exist; Owner and Mode are then its parent directory's.
	Missing bool
	// Owner and Mode are the component's owner uid and mode bits (fstat).
	Owner uint32
	Mode  uint32
	// UID is the worker's uid the path was checked for.
	UID uint32
}

// Error says what is wrong with the component: "/x is owned by uid 1001 (mode 0755)".
func (e *Untrusted) Error() string {
	why := fmt.Sprintf("is owned by uid %d", e.Owner)
	switch {
	case e.Missing:
		return fmt.Sprintf("%s does not exist, and anyone may create it in %s (mode %04o)", e.Dir, filepath.Dir(e.Dir), e.Mode&0o7777)
	case e.Owner == 0 || e.Owner == e.UID:
		why = fmt.Sprintf("is writable by its group or others (owner uid %d)", e.Owner)
	}
	return fmt.Sprintf("%s %s (mode %04o)", e.Dir, why, e.Mode&0o7777)
}

// Check walks path (absolute) from / and returns an *Untrusted for the first component a worker of uid
// must not be given, or nil when every existing component passes. A component that does not exist ends
// the walk: what exists above it passed, unless others may write the directory it would be created in.
// Other failures (a component that is not a directory, too many links, an unreadable directory) are
// returned as they are, wrapped with the path.
func Check(path string, uid uint32) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%s: not an absolute path", path)
	}
	// Not cleaned: "link/.." is the link's target's parent to the kernel, not the link's directory.
	p := path
	for links := 0; ; links++ {
		next, err := walk(p, uid)
		if err != nil || next == "" {
			return err
		}
		if links == maxLinks {
			return &os.PathError{Op: "walk", Path: path, Err: unix.ELOOP}
		}
		p = next
	}
}

// walk checks p's components from /, a ".." as the parent of the directory reached (the kernel's, which
// a lexical clean of a path through a link is not). It returns "" when the walk is done, or the path to
// walk again when it met a trusted symbolic link: its target with the rest of p appended.
func walk(p string, uid uint32) (string, error) {
	fd, err := linux.Retry(func() (int, error) { return unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) })
	if err != nil {
		return "", &os.PathError{Op: "open", Path: "/", Err: err}
	}
	defer func() { unix.Close(fd) }()
	if err := judge(fd, "/", uid); err != nil {
		return "", err
	}
	done := "/"
	comps := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, c := range comps {
		if c == "" || c == "." {
			continue
		}
		cur := filepath.Join(done, c)
		if c == ".." {
			cur = filepath.Dir(done) // done holds no link: the walk starts again at each one
		}
		nfd, err := linux.Retry(func() (int, error) {
			return unix.Openat(fd, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if errors.Is(err, unix.ENOENT) {
			return "", missing(fd, cur, uid)
		}
		if err != nil {
			return "", &os.PathError{Op: "open", Path: cur, Err: err}
		}
		unix.Close(fd)
		fd = nfd
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return "", &os.PathError{Op: "fstat", Path: cur, Err: err}
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			// Only its owner (or root) could replace a link in a directory that passed; its mode means
			// nothing.
			if st.Uid != 0 && st.Uid != uid {
				return "", &Untrusted{Dir: cur, Owner: st.Uid, Mode: st.Mode, UID: uid}
			}
			target, err := readlink(fd, cur)
			if err != nil {
				return "", err
			}
			if !filepath.IsAbs(target) {
				target = done + "/" + target
			}
			return strings.Join(append([]string{target}, comps[i+1:]...), "/"), nil
		}
		if err := judge(fd, cur, uid); err != nil {
			return "", err
		}
		done = cur
	}
	return "", nil
}

// judge applies the rule to the open component fd named name.
func judge(fd int, name string, uid uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	sticky := isDir && st.Uid == 0 && st.Mode&unix.S_ISVTX != 0
	if (st.Uid != 0 && st.Uid != uid) || (st.Mode&0o022 != 0 && !sticky) {
		return &Untrusted{Dir: name, Owner: st.Uid, Mode: st.Mode, UID: uid}
	}
	return nil
}

// missing judges the component name that does not exist in the directory open as fd: nil, unless others
// may write that directory (judge let only a root-owned sticky one pass), where anyone may create name
// once the walk is done.
func missing(fd int, name string, uid uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: filepath.Dir(name), Err: err}
	}
	if st.Mode&0o022 != 0 {
		return &Untrusted{Dir: name, Missing: true, Owner: st.Uid, Mode: st.Mode, UID: uid}
	}
	return nil
}

// readlink reads the target of the symbolic link open as the O_PATH descriptor fd.
func readlink(fd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: name, Err: err}
	}
	if n == len(buf) {
		return "", &os.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	return string(buf[:n]), nil
}
