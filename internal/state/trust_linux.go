package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrUntrusted is returned for a directory hlaunch would keep records, ledger entries or key locks in that
// is not the launcher's alone: another user made it (the non-root default under /tmp can be made by
// anyone first), it is a symbolic link, others may write it, or a directory above it lets others replace
// it. Records there could be forged or swapped, so hlaunch refuses to use it.
var ErrUntrusted = errors.New("not trusted")

// Check verifies dir, when it exists: a real directory (not a symbolic link) owned by the effective uid that
// neither its group nor others may write, under directories that are each owned by root or that uid and
// writable by nobody else unless sticky (as /tmp is). A missing dir passes: there is nothing to trust yet,
// and Open checks what it creates. The error names the directory and what is wrong with it.
func Check(dir string) error {
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return checkAbove(dir)
	}
	if err != nil {
		return fmt.Errorf("state dir %s: %w", dir, err)
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("state dir %s: %w: it is a symbolic link", dir, ErrUntrusted)
	}
	if !st.IsDir() {
		return fmt.Errorf("state dir %s: %w: not a directory", dir, ErrUntrusted)
	}
	if err := owned(dir, st, false); err != nil {
		return err
	}
	return checkAbove(dir)
}

// checkAbove checks every existing directory above dir (following symbolic links there: system paths
// have them, and what they lead to is what is checked).
func checkAbove(dir string) error {
	for p := filepath.Dir(filepath.Clean(dir)); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err == nil {
			if err := owned(p, st, true); err != nil {
				return err
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("state dir %s: %w", p, err)
		}
		if p == "/" || p == "." {
			return nil
		}
	}
}

// owned checks a directory's owner and mode. An ancestor may be root's, and writable by others when sticky
// (nobody but its owner can then rename or remove what the launcher made in it).
func owned(p string, st fs.FileInfo, ancestor bool) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("state dir %s: %w: no owner information", p, ErrUntrusted)
	}
	euid := uint32(os.Geteuid())
	if sys.Uid != euid && !(ancestor && sys.Uid == 0) {
		return fmt.Errorf("state dir %s: %w: owned by uid %d, not %d", p, ErrUntrusted, sys.Uid, euid)
	}
	if st.Mode().Perm()&0o022 != 0 && !(ancestor && st.Mode()&fs.ModeSticky != 0) {
		return fmt.Errorf("state dir %s: %w: mode %04o lets others write it", p, ErrUntrusted, st.Mode().Perm())
	}
	return nil
}
