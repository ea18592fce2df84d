package nsenv

import (
	"errors"
	"fmt"
	"github.com/hlaunch/hlaunch/internal/sysfile"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// maxDotenvSize bounds how much of a .env is read. hermes has no limit; a 16 MiB secrets file is not a
// secrets file, and reading it on every launch would be a denial of service.
const maxDotenvSize = 16 << 20

// ReadDotenv reads and tokenizes the profile's .env (see ParseDotenv). A missing file is an empty list,
// as in hermes. A .env that is a symbolic link leading outside the profile's home gives ErrSymlinkEscape;
// one that exists but cannot be read as a regular file gives ErrUnreadable. Both messages name the file.
func ReadDotenv(p *Profile) ([]DotenvEntry, error) {
	path := p.EnvFile()
	target, err := dotenvTarget(p.Home, path)
	if err != nil || target == "" {
		return nil, err
	}
	// O_NOFOLLOW: the checked path must be the opened file; a link swapped in after the check fails here.
	// O_NONBLOCK: a FIFO planted as .env must not hang the launch; it is refused below as not regular.
	f, err := sysfile.Open(target, syscall.O_NOFOLLOW|syscall.O_NONBLOCK)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: %w: %w", path, ErrUnreadable, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrUnreadable, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: not a regular file (%s)", path, ErrUnreadable, st.Mode().Type())
	}
	if st.Size() > maxDotenvSize {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", path, ErrUnreadable, maxDotenvSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxDotenvSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrUnreadable, err)
	}
	if len(data) > maxDotenvSize {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", path, ErrUnreadable, maxDotenvSize)
	}
	entries, err := parseDotenv(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return entries, nil
}

// dotenvTarget returns the file to open for path: path itself, or where its symbolic link leads when that
// is inside home. It returns "" with no error when the file does not exist (a dangling link inside home
// counts as missing).
func dotenvTarget(home, path string) (string, error) {
	st, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("%s: %w: %w", path, ErrUnreadable, err)
	}
	if st.Mode()&fs.ModeSymlink == 0 {
		return path, nil
	}
	realHome, err := filepath.EvalSymlinks(home)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", path, ErrUnreadable, err)
	}
	target, err := filepath.EvalSymlinks(path)
	missing := false
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: %w: %w", path, ErrUnreadable, err)
		}
		// A dangling link: judge where it points (one hop, resolved as far as it exists).
		link, lerr := os.Readlink(path)
		if lerr != nil {
			return "", fmt.Errorf("%s: %w: %w", path, ErrUnreadable, lerr)
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		target, missing = resolveLoose(filepath.Clean(link)), true
	}
	if !within(target, realHome, false) {
		return "", fmt.Errorf("%s leads to %s, outside the profile home %s: %w", path, target, realHome, ErrSymlinkEscape)
	}
	if missing {
		return "", nil
	}
	return target, nil
}
