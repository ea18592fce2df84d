package profile

import (
	"strings"
	"unicode"
)

// pySpace reports whether Python's str.isspace() (and so str.strip() and the re module's \s) treats r as
// whitespace. It is Go's unicode.IsSpace plus the four information separators U+001C..U+001F, which Python
// counts as whitespace and Go does not. Matching it exactly is what makes the tokenizer byte-for-byte
// compatible with hermes' load_env_file.
func pySpace(r rune) bool {
	if r < 0x80 {
		switch r {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f:
			return true
		}
		return false
	}
	return unicode.IsSpace(r)
}

// pyStrip is Python's str.strip() with no arguments.
func pyStrip(s string) string {
	// Fast path for the common case: nothing to trim at either end.
	if s == "" || (s[0] > ' ' && s[0] < 0x80 && s[len(s)-1] > ' ' && s[len(s)-1] < 0x80) {
		return s
	}
	return strings.TrimFunc(s, pySpace)
}

// pyLStrip is Python's str.lstrip() with no arguments.
func pyLStrip(s string) string {
	if s == "" || (s[0] > ' ' && s[0] < 0x80) {
		return s
	}
	return strings.TrimLeftFunc(s, pySpace)
}

// isLineBreak reports whether Python's str.splitlines() ends a line at r.
func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// upperASCII returns s with ASCII letters upper-cased. Environment names are matched case-insensitively
// only over ASCII: Unicode case folding would let a look-alike (U+212A KELVIN SIGN) match "K".
// It does not allocate when s has no lower-case ASCII letter.
func upperASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'a' && c <= 'z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'a' && b[j] <= 'z' {
					b[j] -= 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
