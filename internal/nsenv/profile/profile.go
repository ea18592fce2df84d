package profile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/beneath"
)

// Profile is one hermes profile on disk, opened and checked by Open.
type Profile struct {
	// Name is the canonical profile name (DefaultProfile for the root's own profile).
	Name string
	// Root is the hermes root, absolute and clean.
	Root string
	// Home is the profile's home directory, absolute and clean: Root for the default profile, else
	// Root/profiles/Name. It is what the child is told (HERMES_HOME) and what messages show; the files
	// of the home are opened through dir, never through this string.
	Home string
	// dir is an O_PATH descriptor of the home, opened once by Open; nil for a Profile made by hand.
	dir *os.File
	// id is the home's device and inode, read from dir when it was opened.
	id FileID
	// uid and gid are the home's owner and group, read from dir when it was opened.
	uid, gid uint32
}

// FileID names one directory by device and inode: what a later open of the same path must find again.
// The zero value means "unknown".
type FileID struct {
	// Dev and Ino are st_dev and st_ino.
	Dev, Ino uint64
}

// HomeID is the identity of the home directory Open opened and read the .env below. The sandbox
// view checks that the home it mounts is the same directory (sandbox.Spec.HomeID), so a child never gets one
// home's environ and another's files.
func (p *Profile) HomeID() FileID { return p.id }

// Owner is the owner uid and group gid of the home directory Open opened (fstat of its descriptor): who
// a root launcher's worker of the profile runs as (docs/security.md, "Privilege follows the profile").
// Both are 0 for a Profile made by hand.
func (p *Profile) Owner() (uid, gid uint32) { return p.uid, p.gid }

// newProfile wraps the home's descriptor fd.
func newProfile(name, root, home string, fd int) (*Profile, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("profile '%s': %w: %w", name, ErrNoProfile, os.NewSyscallError("fstat", err))
	}
	return &Profile{Name: name, Root: root, Home: home, dir: os.NewFile(uintptr(fd), home),
		id: FileID{Dev: uint64(st.Dev), Ino: st.Ino}, uid: st.Uid, gid: st.Gid}, nil
}

// Open attaches to an existing profile under root; it creates nothing. The name is normalized
// (NormalizeName) and refused before any path is built. The default profile's home is root itself;
// any other profile's home is <root>/profiles/<name>.
//
// The root is the caller's choice (--root, HERMES_HOME) and may be or pass through a symbolic link; it is
// opened once. Everything below it is resolved from that descriptor without following any symbolic
// link (internal/beneath: openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS), and the
// home's descriptor is kept: readDotenv opens the .env below it, so a worker that swaps its home, or a
// directory on the way, for a link to another profile between this check and the read gains nothing.
//
// Errors: a tombstone at <root>/profiles/.deleted/<name> gives ErrTombstoned and a missing home gives
// ErrNoProfile (both "profile 'x' does not exist", as hermes words it; never a fallback to another home);
// a <root>/profiles or a home that is a symbolic link gives ErrSymlinkEscape. Close releases the
// descriptor (a Profile that is dropped is closed by the garbage collector).
func Open(root, name string) (*Profile, error) {
	n, err := NormalizeName(name)
	if err != nil {
		return nil, err
	}
	if root == "" {
		return nil, fmt.Errorf("profile '%s': %w: empty root", n, ErrNoRoot)
	}
	root, err = absClean(root, "root")
	if err != nil {
		return nil, err
	}
	rootFD, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		// The root, not the profile, is what is missing (a mistyped --root is not a missing profile).
		// Still ErrNoProfile too: no profile can exist under it.
		return nil, worded(fmt.Sprintf("hermes root %s is not a directory (set by --root, $HLAUNCH_ROOT or $HERMES_HOME)", root), ErrNoRoot, ErrNoProfile)
	}
	if err != nil {
		return nil, profileErr(n, root, err)
	}
	if n == DefaultProfile {
		return newProfile(n, root, root, rootFD)
	}
	defer unix.Close(rootFD)
	home := filepath.Join(root, "profiles", n)
	tomb := filepath.Join(root, "profiles", ".deleted", n)
	if _, err := beneath.Lstat(rootFD, "profiles/.deleted/"+n, tomb); err == nil {
		return nil, worded(fmt.Sprintf("profile '%s' does not exist: it was deleted (tombstone %s)", n, tomb), ErrTombstoned)
	} else if beneath.IsUnsafe(err) {
		return nil, profileErr(n, tomb, err)
	}
	fd, err := beneath.Open(rootFD, "profiles/"+n, unix.O_PATH|unix.O_DIRECTORY, 0, home)
	if err != nil {
		return nil, profileErr(n, home, err)
	}
	return newProfile(n, root, home, fd)
}

// profileErr words a failure to open the home (or the root) at path.
func profileErr(name, path string, err error) error {
	switch {
	case beneath.IsUnsafe(err):
		// The home must be its own directory: a link to anywhere else, even to a sibling profile inside
		// profiles/, would hand one profile's files to another.
		return fmt.Errorf("profile '%s': %s is, or passes through, a symbolic link (refused: nothing under the root is followed): %w", name, path, ErrSymlinkEscape)
	case errors.Is(err, fs.ErrNotExist):
		return worded(fmt.Sprintf("profile '%s' does not exist (no directory %s)", name, path), ErrNoProfile)
	case errors.Is(err, unix.ENOTDIR):
		return worded(fmt.Sprintf("profile '%s' does not exist (%s is not a directory)", name, path), ErrNoProfile)
	}
	return fmt.Errorf("profile '%s': %w: %w", name, ErrNoProfile, err)
}

// Close releases the home's descriptor. The Profile's strings stay usable; its files cannot be read.
func (p *Profile) Close() error {
	if p.dir == nil {
		return nil
	}
	err := p.dir.Close()
	p.dir = nil
	return err
}

// EnvFile is the profile's secrets file, <home>/.env (for messages; it is opened below the home's
// descriptor).
func (p *Profile) EnvFile() string { return filepath.Join(p.Home, ".env") }

// Scratch is the children's temporary directory, <home>/cache/scratch (TMPDIR, TMP and TEMP).
func (p *Profile) Scratch() string { return filepath.Join(p.Home, "cache", "scratch") }
