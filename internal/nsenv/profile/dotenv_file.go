package profile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/beneath"
	"github.com/hlaunch/hlaunch/internal/linux"
)

// maxDotenvSize bounds how much of a .env is read. hermes has no limit; a 16 MiB secrets file is not a
// secrets file, and reading it on every launch would be a denial of service.
const maxDotenvSize = 16 << 20

// noOwner is the owner readDotenv reports for a missing .env.
const noOwner = ^uint32(0)

// readDotenv reads and tokenizes the profile's .env (see parseDotenv) and returns the file's owner (fstat
// of the descriptor it read). A missing file is an empty list, as in hermes, owned by noOwner.
//
// The file is opened below the home's descriptor that Open kept, never through the Home string,
// and never through a symbolic link: a .env that is a link - even to a file inside the home - gives
// ErrSymlinkEscape, because a worker can re-point a link, or swap a directory the link passes through,
// between any check and the open. It is first opened O_PATH and checked with fstat; only a regular file
// is then opened for reading (through the same descriptor), so a FIFO or a device planted as .env is
// never opened at all (ErrUnreadable). A file over 16 MiB is ErrUnreadable, one that is not UTF-8
// ErrNotUTF8. Every message names the file.
func readDotenv(p *Profile) ([]DotenvEntry, uint32, error) {
	path := p.EnvFile()
	if p.dir == nil {
		return nil, 0, fmt.Errorf("%s: %w: the profile was not opened with Open, or is closed", path, ErrUnreadable)
	}
	pfd, err := beneath.Open(int(p.dir.Fd()), ".env", unix.O_PATH, 0, path)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, noOwner, nil
		case beneath.IsUnsafe(err):
			return nil, 0, fmt.Errorf("%s is a symbolic link: %w (a profile's .env is read only as a regular file of its own home)", path, ErrSymlinkEscape)
		}
		return nil, 0, fmt.Errorf("%s: %w: %w", path, ErrUnreadable, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, 0, fmt.Errorf("%s: %w: %w", path, ErrUnreadable, os.NewSyscallError("fstat", err))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, fmt.Errorf("%s: %w: not a regular file (%s)", path, ErrUnreadable, linux.FileKind(st.Mode))
	}
	if st.Size > maxDotenvSize {
		return nil, 0, fmt.Errorf("%s: %w: larger than %d bytes", path, ErrUnreadable, maxDotenvSize)
	}
	fd, err := beneath.Reopen(pfd, unix.O_RDONLY|unix.O_NOCTTY, path)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w: %w", path, ErrUnreadable, err)
	}
	// A descriptor opened beneath the home, made an *os.File to be read to its end.
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDotenvSize+1))
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w: %w", path, ErrUnreadable, err)
	}
	if len(data) > maxDotenvSize {
		return nil, 0, fmt.Errorf("%s: %w: larger than %d bytes", path, ErrUnreadable, maxDotenvSize)
	}
	entries, err := parseDotenv(data)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return entries, st.Uid, nil
}

// homeWriter says why someone other than uid can replace the home's .env, or "" when nobody but uid and
// root can: whoever may write the home renames any file it can move over the .env, and a file root owns
// counts as root's own (a root launcher makes a worker's --log in the home's logs/, holding what the
// worker printed, and the home's owner renames it to .env).
func homeWriter(p *Profile, uid uint32) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(p.dir.Fd()), &st); err != nil {
		return "", fmt.Errorf("%s: %w: %w", p.Home, ErrUnreadable, os.NewSyscallError("fstat", err))
	}
	switch {
	case st.Uid != uid && st.Uid != 0:
		return fmt.Sprintf("its home is owned by uid %d", st.Uid), nil
	case st.Mode&0o022 != 0:
		return fmt.Sprintf("its home is writable by its group or others (mode %04o)", st.Mode&0o7777), nil
	}
	return "", nil
}
