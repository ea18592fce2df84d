package proc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultPath is searched when the child's environ has no PATH (execvp's behaviour, made explicit).
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// LookPath finds file in path, the CHILD's PATH (never the launcher's), as this process may run it. A name
// with a slash is used as is. It returns an error wrapping unix.ENOENT when nothing is found and
// unix.EACCES when only non-executable candidates exist, so ExitCodeFor gives 127 and 126 as a shell would.
func LookPath(file, path string) (string, error) {
	return lookPath(file, path, func(p string) error { return unix.Access(p, unix.X_OK) })
}

// LookPathAs is LookPath as the ids of cred may run file: a root launcher's worker that drops to its
// profile's owner passes over a directory of its PATH it cannot search, or a file it cannot run, as its
// own execvp would, where root's check would stop there and the worker's exec fail. cred nil, or of this
// process's own uid, is LookPath.
func LookPathAs(file, path string, cred *syscall.Credential) (string, error) {
	if cred == nil || int(cred.Uid) == os.Geteuid() {
		return LookPath(file, path)
	}
	return lookPath(file, path, func(p string) error { return accessAs(p, cred) })
}

func lookPath(file, path string, access func(string) error) (string, error) {
	if strings.Contains(file, "/") {
		if err := access(file); err != nil {
			return "", &os.PathError{Op: "exec", Path: file, Err: err}
		}
		return file, nil
	}
	if path == "" {
		path = DefaultPath
	}
	denied := false
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			continue
		}
		if access(p) == nil {
			return p, nil
		}
		denied = true
	}
	if denied {
		return "", &os.PathError{Op: "exec", Path: file, Err: unix.EACCES}
	}
	return "", &os.PathError{Op: "exec", Path: file, Err: unix.ENOENT}
}

// ExitCodeFor maps an exec failure to the shell's convention: 127 not found, 126 found but not runnable.
func ExitCodeFor(err error) int {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return 127
	}
	return 126
}
