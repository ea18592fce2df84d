package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
	if err := checkOne(dir); err != nil {
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

// CheckTree is Check for dir and, below it, each of subs (names or relative paths inside dir): the
// directories above dir are checked once, a sub only for itself and what lies between it and dir.
// A sub that is an absolute path elsewhere gets the full Check.
func CheckTree(dir string, subs ...string) error {
	if err := Check(dir); err != nil {
		return err
	}
	root := filepath.Clean(dir)
	for _, s := range subs {
		p := filepath.Clean(s)
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			if err := Check(p); err != nil {
				return err
			}
			continue
		}
		for q := p; q != root; q = filepath.Dir(q) {
			if err := checkOne(q); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkOne is Check's test of one directory, without the directories above it.
func checkOne(dir string) error {
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("state dir %s: %w", dir, err)
	case st.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("state dir %s: %w: it is a symbolic link", dir, ErrUntrusted)
	case !st.IsDir():
		return fmt.Errorf("state dir %s: %w: not a directory", dir, ErrUntrusted)
	}
	return owned(dir, st, false)
}
