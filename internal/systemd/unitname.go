package systemd

import (
	"fmt"
	"strings"
)

// maxUnitNameLen is systemd's UNIT_NAME_MAX (including the type suffix).
const maxUnitNameLen = 255

// unitSuffixes are the unit types a name may end in; a name without one of them is checked as a bare prefix
// (the form hermes stores, e.g. "hermes-worker-kanban-7-run-3").
var unitSuffixes = [...]string{".scope", ".service", ".slice", ".socket", ".target", ".timer", ".mount", ".path"}

// ValidUnitName reports whether name is usable as a transient unit name, with or without a type suffix.
// It accepts what systemd accepts for a non-template unit ([A-Za-z0-9:_.\-] and "\" escapes, at most 255
// bytes with the suffix) and is stricter in two ways that keep names safe on a command line: the first
// character may not be '-' or '.', and '@' (template instances) is refused. hermes names such as
// "hermes-worker-kanban-7-run-3", "proc_0123456789ab" and "cron-nightly-exec-4" are valid.
func ValidUnitName(name string) error {
	prefix := name
	for _, s := range unitSuffixes {
		if strings.HasSuffix(name, s) {
			prefix = strings.TrimSuffix(name, s)
			break
		}
	}
	full := len(name)
	if prefix == name {
		full += len(".scope")
	}
	switch {
	case prefix == "":
		return fmt.Errorf("%w: %q: empty name", ErrBadUnitName, name)
	case full > maxUnitNameLen:
		return fmt.Errorf("%w: %q: longer than %d bytes", ErrBadUnitName, name, maxUnitNameLen)
	case prefix[0] == '-' || prefix[0] == '.':
		return fmt.Errorf("%w: %q: must not start with %q", ErrBadUnitName, name, prefix[0])
	}
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == ':' || c == '_' || c == '.' || c == '-' || c == '\\':
		default:
			return fmt.Errorf("%w: %q: byte %q at %d is not allowed (only A-Z a-z 0-9 : _ . - \\)",
				ErrBadUnitName, name, c, i)
		}
	}
	return nil
}

// ScopeName returns name with a ".scope" suffix, adding it when missing, after checking it with
// ValidUnitName. A name with another unit type suffix is refused.
func ScopeName(name string) (string, error) {
	if err := ValidUnitName(name); err != nil {
		return "", err
	}
	if strings.HasSuffix(name, ".scope") {
		return name, nil
	}
	for _, s := range unitSuffixes {
		if strings.HasSuffix(name, s) {
			return "", fmt.Errorf("%w: %q: a scope name cannot end in %q", ErrBadUnitName, name, s)
		}
	}
	return name + ".scope", nil
}
