package profile

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Sources recorded in Entry.Source.
const (
	// SourceLauncher: copied from the launcher's environment (a base name, or an --inherit name).
	SourceLauncher = "launcher"
	// SourceDerived: computed from the target profile (HERMES_HOME, HERMES_PROFILE, TMPDIR, ...).
	SourceDerived = "derived"
	// SourceFlag: a literal --env value from the caller.
	SourceFlag = "flag"
	// sourceProfilePrefix starts "profile:<file>:<line>" for entries of the target's .env.
	sourceProfilePrefix = "profile:"
)

// Entry is one variable of a child's environ with its provenance.
type Entry struct {
	// Name and Value are the variable.
	Name, Value string
	// Source says where it came from: "launcher", "derived", "profile:<file>:<line>" or "flag".
	Source string
	// Secret is true for credentials (see Policy.IsCredential); displays show "***" for them.
	Secret bool
}

// Environ is a child's environ. Compose returns it sorted by name with one entry per name.
type Environ []Entry

// Strings returns the environ as "NAME=VALUE" strings for execve, sorted by name, one per name (for an
// Environ built by hand, the last entry of a name wins).
func (e Environ) Strings() []string {
	sorted := slices.Clone(e)
	slices.SortStableFunc(sorted, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	out := make([]string, 0, len(sorted))
	for i, en := range sorted {
		if i+1 < len(sorted) && sorted[i+1].Name == en.Name {
			continue
		}
		out = append(out, en.Name+"="+en.Value)
	}
	return out
}

// Lookup returns the entry named name (exactly; the last one if an Environ built by hand repeats it).
func (e Environ) Lookup(name string) (Entry, bool) {
	for i := len(e) - 1; i >= 0; i-- {
		if e[i].Name == name {
			return e[i], true
		}
	}
	return Entry{}, false
}

// ParseAssignment splits a --env argument "NAME=VALUE" at its first '='. The value is literal (it may be
// empty and may hold '='). An empty name, a name with whitespace, or a NUL byte anywhere gives
// ErrBadAssignment naming --env.
func ParseAssignment(s string) (key, value string, err error) {
	eq := strings.IndexByte(s, '=')
	if eq < 0 {
		return "", "", fmt.Errorf("--env %q: %w: want NAME=VALUE", s, ErrBadAssignment)
	}
	key, value = s[:eq], s[eq+1:]
	if err := checkFlagName(key); err != nil {
		// The name only: the value may be the very secret the caller meant to pass.
		return "", "", fmt.Errorf("--env %q: %w", key+"=...", err)
	}
	if strings.IndexByte(value, 0) >= 0 {
		return "", "", fmt.Errorf("--env %q: %w: NUL byte in the value", key, ErrBadAssignment)
	}
	return key, value, nil
}

// checkFlagName checks a name given on the command line (--env, --inherit, --pass).
func checkFlagName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty name", ErrBadAssignment)
	}
	for _, r := range name {
		// Control characters too: a name is printed back (errors, env --explain), and an escape sequence
		// in it would be written to the caller's terminal.
		if r == '=' || pySpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("%w: name %q holds '=', NUL, whitespace or a control character", ErrBadAssignment, name)
		}
	}
	return nil
}
