// Package trust decides whether a file that steers a launch - a binary hlaunch executes beside its own
// (the sidecar runs every spawn's shim as the hlaunch installed beside it; `hlaunch sidecar` execs the
// hlaunch-sidecar beside it), a --spec or --policy file it takes its orders from - can be changed by a uid
// other than root and the launcher's. A root launcher reads or executes such a path long after whoever
// set it up: whoever may write the file or a directory above it chooses what root runs.
package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrUntrusted is returned for a file that another uid than root and the effective uid could change or
// replace.
var ErrUntrusted = errors.New("not trusted")

// Beside returns the path of name in the running executable's directory, after Check.
func Beside(name string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("own path: %w", err)
	}
	p := filepath.Join(filepath.Dir(exe), name)
	if err := Check(p); err != nil {
		return "", err
	}
	return p, nil
}

// Check verifies that only root and the effective uid can change what path executes: the file, reached
// through no symbolic link at its last component, is a regular file owned by one of them and writable by
// neither its group nor others, and every directory above it (symbolic links on the way followed: what
// they lead to is what is checked) is owned by one of them and writable by nobody else unless sticky (as
// /tmp is: nobody but the file's owner can rename or remove it there). The error names the path at fault.
func Check(path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: %w: not a regular file", path, ErrUntrusted)
	}
	if err := trusted(path, st, false); err != nil {
		return err
	}
	for d := filepath.Dir(filepath.Clean(path)); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if err := trusted(d, st, true); err != nil {
			return err
		}
		if d == "/" || d == "." {
			return nil
		}
	}
}

// Resolve is Check for a file named by the caller (a --spec, a --policy), which may be reached through
// symbolic links: it returns the path with every link resolved, checked, for the caller to open instead
// of path (a link in a directory the caller trusts less could otherwise be re-pointed after the check).
func Resolve(path string) (string, error) {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	if p, err = filepath.Abs(p); err != nil {
		return "", err
	}
	if err := Check(p); err != nil {
		return "", err
	}
	return p, nil
}

// trusted checks one file's or directory's owner and mode.
func trusted(p string, st fs.FileInfo, dir bool) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: %w: no owner information", p, ErrUntrusted)
	}
	if euid := uint32(os.Geteuid()); sys.Uid != 0 && sys.Uid != euid {
		return fmt.Errorf("%s: %w: owned by uid %d, not by root or uid %d, who runs it", p, ErrUntrusted, sys.Uid, euid)
	}
	if st.Mode().Perm()&0o022 != 0 && !(dir && st.Mode()&fs.ModeSticky != 0) {
		return fmt.Errorf("%s: %w: mode %04o lets others write it", p, ErrUntrusted, st.Mode().Perm())
	}
	return nil
}
