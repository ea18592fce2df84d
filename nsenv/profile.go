package nsenv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Profile is one hermes profile on disk, opened and checked by OpenProfile.
type Profile struct {
	// Name is the canonical profile name (DefaultProfile for the root's own profile).
	Name string
	// Root is the hermes root, absolute and clean.
	Root string
	// Home is the profile's home directory, absolute and clean: Root for the default profile, else
	// Root/profiles/Name.
	Home string
}

// OpenProfile attaches to an existing profile under root; it creates nothing. The name is normalized
// (NormalizeName) and refused before any path is built. The default profile's home is root itself;
// any other profile's home is <root>/profiles/<name>.
//
// Errors: a tombstone at <root>/profiles/.deleted/<name> gives ErrTombstoned and a missing home gives
// ErrNoProfile (both "profile 'x' does not exist", as hermes words it; never a fallback to another home);
// a <root>/profiles that is a symbolic link leading outside root, or a home that is a symbolic link
// leading anywhere but its own place under <root>/profiles, gives ErrSymlinkEscape.
func OpenProfile(root, name string) (*Profile, error) {
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
	if n == DefaultProfile {
		// The root is the user's choice (--root, HERMES_HOME); a symbolic link there is not an escape.
		if err := requireDir(root, n); err != nil {
			return nil, err
		}
		return &Profile{Name: n, Root: root, Home: root}, nil
	}
	profiles := filepath.Join(root, "profiles")
	home := filepath.Join(profiles, n)
	tomb := filepath.Join(profiles, ".deleted", n)
	if _, err := os.Lstat(tomb); err == nil {
		return nil, fmt.Errorf("profile '%s' does not exist: %w (tombstone %s)", n, ErrTombstoned, tomb)
	}
	if err := requireDir(home, n); err != nil {
		return nil, err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("profile '%s': %w: %w", n, ErrNoProfile, err)
	}
	realProfiles, err := filepath.EvalSymlinks(profiles)
	if err != nil {
		return nil, fmt.Errorf("profile '%s': %w: %w", n, ErrNoProfile, err)
	}
	if !within(realProfiles, realRoot, false) {
		return nil, fmt.Errorf("profile '%s': %s leads to %s, outside the root %s: %w", n, profiles, realProfiles, realRoot, ErrSymlinkEscape)
	}
	realHome, err := filepath.EvalSymlinks(home)
	if err != nil {
		return nil, fmt.Errorf("profile '%s': %w: %w", n, ErrNoProfile, err)
	}
	// The home must be its own directory: a link to anywhere else, even to a sibling profile inside
	// profiles/, would hand one profile's files to another.
	if realHome != filepath.Join(realProfiles, n) {
		return nil, fmt.Errorf("profile '%s': home %s leads to %s, not its own directory under %s: %w", n, home, realHome, realProfiles, ErrSymlinkEscape)
	}
	return &Profile{Name: n, Root: root, Home: home}, nil
}

// requireDir checks that dir exists and is a directory (following links; escapes are checked apart).
func requireDir(dir, name string) error {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("profile '%s' does not exist: %w (no directory %s)", name, ErrNoProfile, dir)
		}
		return fmt.Errorf("profile '%s': %w: %w", name, ErrNoProfile, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("profile '%s' does not exist: %w (%s is not a directory)", name, ErrNoProfile, dir)
	}
	return nil
}

// EnvFile is the profile's secrets file, <home>/.env.
func (p *Profile) EnvFile() string { return filepath.Join(p.Home, ".env") }

// Scratch is the children's temporary directory, <home>/cache/scratch (TMPDIR, TMP and TEMP).
func (p *Profile) Scratch() string { return filepath.Join(p.Home, "cache", "scratch") }
