package proc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultPath is searched when the child's environ has no PATH (execvp's behaviour, made explicit).
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// LookPath finds file in path, the CHILD's PATH (never the launcher's). A name with a slash is used as is.
// It returns an error wrapping unix.ENOENT when nothing is found and unix.EACCES when only non-executable
// candidates exist, so ExitCodeFor gives 127 and 126 as a shell would.
func LookPath(file, path string) (string, error) {
	if strings.Contains(file, "/") {
		if err := unix.Access(file, unix.X_OK); err != nil {
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
		if unix.Access(p, unix.X_OK) == nil {
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
