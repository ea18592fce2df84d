// Package selfpath finds the hlaunch binaries a process executes beside its own (the sidecar runs every
// spawn's shim as the hlaunch installed beside it; `hlaunch sidecar` execs the hlaunch-sidecar beside it)
// and refuses one that another uid could replace: a root sidecar executes that path again for every
// spawn, long after it started, so whoever may write the file or a directory above it runs code as root.
package selfpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrUntrusted is returned for a binary beside the running one that another uid than root and the
// effective uid could replace.
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

// trusted checks one file's or directory's owner and mode.
func trusted(p string, st fs.FileInfo, dir bool) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: %w: no owner information", p, ErrUntrusted)
	}
	if euid := uint32(os.Geteuid()); sys.Uid != 0 && sys.Uid != euid {
		return fmt.Errorf("%s: %w: owned by uid %d, not by root or uid %d, who executes it", p, ErrUntrusted, sys.Uid, euid)
	}
	if st.Mode().Perm()&0o022 != 0 && !(dir && st.Mode()&fs.ModeSticky != 0) {
		return fmt.Errorf("%s: %w: mode %04o lets others write it", p, ErrUntrusted, st.Mode().Perm())
	}
	return nil
}
