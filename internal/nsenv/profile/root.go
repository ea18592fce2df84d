package profile

import (
	"fmt"
	"path/filepath"
	"strings"
)

// ResolveRoot finds the hermes root: flagRoot (--root) when set, else $HLAUNCH_ROOT, else the root hermes
// itself derives from $HERMES_HOME, else <userHome>/.hermes. The result is absolute and cleaned. getenv is
// the launcher's environment lookup (os.Getenv in the CLI); it is asked for HLAUNCH_ROOT, HERMES_HOME,
// and, to expand HERMES_HOME as hermes does (expanduser(expandvars(...))), HOME and the variables
// HERMES_HOME names.
//
// The HERMES_HOME rule is hermes' get_default_hermes_root: a HERMES_HOME inside ~/.hermes (resolving
// symbolic links) means ~/.hermes; otherwise a profile-shaped HERMES_HOME (<root>/profiles/<name>) means
// its grandparent, and any other HERMES_HOME is the root itself (Docker and custom layouts).
func ResolveRoot(flagRoot string, getenv func(string) string, userHome string) (string, error) {
	if flagRoot != "" {
		return absClean(flagRoot, "--root")
	}
	if getenv != nil {
		if v := getenv("HLAUNCH_ROOT"); v != "" {
			return absClean(v, "HLAUNCH_ROOT")
		}
		if v := strings.TrimSpace(getenv("HERMES_HOME")); v != "" {
			home, err := absClean(expandHermesHome(v, getenv, userHome), "HERMES_HOME")
			if err != nil {
				return "", err
			}
			if userHome != "" {
				native, err := absClean(filepath.Join(userHome, ".hermes"), "home directory")
				if err != nil {
					return "", err
				}
				if within(resolveLoose(home), resolveLoose(native), true) {
					return native, nil
				}
			}
			if filepath.Base(filepath.Dir(home)) == "profiles" {
				return filepath.Dir(filepath.Dir(home)), nil
			}
			return home, nil
		}
	}
	if userHome == "" {
		return "", fmt.Errorf("%w: no --root, HLAUNCH_ROOT or HERMES_HOME, and no home directory for ~/.hermes", ErrNoRoot)
	}
	return absClean(filepath.Join(userHome, ".hermes"), "home directory")
}

// absClean makes p absolute (against the working directory) and clean.
func absClean(p, what string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w: %w", what, p, ErrNoRoot, err)
	}
	return a, nil
}

// resolveLoose resolves symbolic links like Python's Path.resolve(strict=False): the longest existing
// prefix is resolved and the rest is appended as is.
func resolveLoose(p string) string {
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// within reports whether path p lies inside dir (or is dir itself when orEqual). Both must be clean and
// absolute.
func within(p, dir string, orEqual bool) bool {
	if p == dir {
		return orEqual
	}
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, dir+"/")
}
