package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable is how every string hlaunch did not write itself - a profile's .env names and values, a
// worker's argv, a key, an error naming any of these - is shown on a terminal: as it is when it holds
// only printable characters, else Go-quoted ("a\x1b]0;pwned\ab"), so that an escape sequence planted by
// a worker (a window title, a cursor move that hides a line, OSC 52 writing the clipboard, a bidi
// override that reorders what is read) reaches the caller's terminal as text and never as control. Tab,
// newline, every C0 and C1 control, DEL, format characters (bidi controls, zero-width) and invalid UTF-8
// are what make a string need quoting. --json output is exact and needs none of this.
func printable(s string) string {
	if clean(s) {
		return s
	}
	return strconv.Quote(s)
}

// printableLine is printable for a line of prose (an error message): only the characters that need it
// are escaped, in place, without quoting the whole line.
func printableLine(s string) string {
	if clean(s) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&sb, `\x%02x`, s[i])
		case r != ' ' && !unicode.IsPrint(r):
			q := strconv.QuoteRune(r)
			sb.WriteString(q[1 : len(q)-1])
		default:
			sb.WriteString(s[i : i+size])
		}
		i += size
	}
	return sb.String()
}

// clean reports whether s is valid UTF-8 of printable characters and ASCII spaces only.
func clean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !unicode.IsPrint(r) {
			return false
		}
		i += size
	}
	return true
}
