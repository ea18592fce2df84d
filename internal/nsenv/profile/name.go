package profile

import (
	"fmt"
	"strings"
)

// DefaultProfile is the name of the profile whose home is the hermes root itself.
const DefaultProfile = "default"

// maxNameLen is the longest profile name hermes accepts (1 + 63 characters).
const maxNameLen = 64

// NormalizeName turns a profile name as a user typed it into its canonical form, the way hermes does:
// strip surrounding whitespace, lower-case, then check the grammar ^[a-z0-9][a-z0-9_-]{0,63}$.
// "default" in any case is valid and returns DefaultProfile (the root's own profile). The names hermes
// reserves (hermes test tmp root sudo) return ErrReservedName; anything outside the grammar returns
// ErrInvalidName, so no path is ever built from a name like "../x".
//
// One deliberate difference: hermes lower-cases with Python's Unicode rules, so U+212A KELVIN SIGN becomes
// "k" and "\u212aate" names profile "kate". A name that only aliases another under case folding is a
// spoofing risk, so any non-ASCII character is refused here.
func NormalizeName(raw string) (string, error) {
	s := pyStrip(raw)
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return "", fmt.Errorf("profile name %q: %w: only ASCII letters, digits, '_' and '-' are allowed", raw, ErrInvalidName)
		}
	}
	s = strings.ToLower(s)
	if !validName(s) {
		return "", fmt.Errorf("profile name %q: %w: must match ^[a-z0-9][a-z0-9_-]{0,63}$", raw, ErrInvalidName)
	}
	if s == DefaultProfile {
		return DefaultProfile, nil
	}
	switch s {
	case "hermes", "test", "tmp", "root", "sudo":
		return "", fmt.Errorf("profile name %q: %w", raw, ErrReservedName)
	}
	return s, nil
}

// validName is the grammar ^[a-z0-9][a-z0-9_-]{0,63}$, hand-written so no regexp runs on the launch path.
func validName(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}
