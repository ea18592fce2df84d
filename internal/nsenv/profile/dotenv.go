package profile

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// DotenvEntry is one assignment of a .env file.
type DotenvEntry struct {
	// Key is the name, trimmed; never empty.
	Key string
	// Value is the value after quote and comment handling.
	Value string
	// Line is the 1-based line number (lines as Python's str.splitlines counts them).
	Line int
}

// utf8BOM is stripped from the start of a .env, as hermes' utf-8-sig decoding does.
const utf8BOM = "\xEF\xBB\xBF"

// parseDotenv tokenizes a .env's bytes the way hermes' load_env_file (agent/secret_scope.py) does, rule
// for rule:
//
//   - the bytes lose a leading UTF-8 BOM and must be valid UTF-8 (hermes' utf-8-sig). A file that is not
//     is refused with ErrNotUTF8 naming the byte offset (counted in the file, BOM included): hermes reads
//     such a file as an empty map, and re-encoding it (latin-1) would make keys hermes never sees, which
//     could slip past the name lists;
//   - lines are split as Python's str.splitlines splits them (\n \r \r\n \v \f \x1c \x1d \x1e \x85
//     U+2028 U+2029) and stripped of Python whitespace; empty lines and lines starting '#' are skipped;
//   - a leading "export " is dropped; the line splits at the first '='; the key is trimmed; a line
//     without '=' or with an empty key is skipped;
//   - inline comments: a value starting with a quote is scanned to its matching close quote (backslash-aware
//     in "...") and a trailing "# ..." after it is dropped; an unquoted value is cut only at whitespace
//     followed by '#' (foo#bar stays foo#bar); an unterminated quote is kept as is;
//   - a value quoted "..." at both ends loses the quotes and has only \" and \\ unescaped; '...' is literal;
//     a bare value is trimmed. No ${VAR} interpolation, no multi-line values, no \n decoding.
//
// Entries come back in file order, duplicates included (hermes keeps the later one; so does Compose).
// The error is ErrNotUTF8, naming no file (readDotenv adds it).
func parseDotenv(data []byte) ([]DotenvEntry, error) {
	bom := 0
	if bytes.HasPrefix(data, []byte(utf8BOM)) {
		data, bom = data[len(utf8BOM):], len(utf8BOM)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w at byte %d: refused (hermes would read the file as empty, and a re-encoded key could slip past the name lists)", ErrNotUTF8, bom+invalidUTF8At(data))
	}
	text := string(data)
	entries := make([]DotenvEntry, 0, bytes.Count(data, []byte{'\n'})+1)
	lineNo := 0
	for len(text) > 0 {
		line, rest := nextLine(text)
		text = rest
		lineNo++
		if k, v, ok := parseLine(line); ok {
			entries = append(entries, DotenvEntry{Key: k, Value: v, Line: lineNo})
		}
	}
	return entries, nil
}

// invalidUTF8At is the offset of the first byte of b that does not start a valid UTF-8 sequence, the
// position Python's UnicodeDecodeError reports as its start.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// nextLine returns the first line of s (without its terminator) and what follows, splitting where
// Python's str.splitlines does. s must not be empty.
func nextLine(s string) (line, rest string) {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x80 {
			i++
			continue
		}
		r, size := rune(c), 1
		if c >= 0x80 {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if isLineBreak(r) {
			if r == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				return s[:i], s[i+2:]
			}
			return s[:i], s[i+size:]
		}
		i += size
	}
	return s, ""
}

// parseLine applies hermes' per-line rules; ok is false for a line that assigns nothing.
func parseLine(raw string) (key, value string, ok bool) {
	line := pyStrip(raw)
	if line == "" || line[0] == '#' {
		return "", "", false
	}
	if strings.HasPrefix(line, "export ") {
		line = pyLStrip(line[len("export "):])
	}
	eq := strings.IndexByte(line, '=')
	if eq < 0 {
		return "", "", false
	}
	key = pyStrip(line[:eq])
	if key == "" {
		return "", "", false
	}
	return key, unquote(stripInlineComment(line[eq+1:])), true
}

// stripInlineComment is hermes' _strip_inline_comment (python-dotenv semantics).
func stripInlineComment(value string) string {
	value = pyStrip(value)
	if value == "" {
		return value
	}
	if q := value[0]; q == '"' || q == '\'' {
		for i := 1; i < len(value); i++ {
			c := value[i]
			if q == '"' && c == '\\' {
				// Skip the escaped character. Landing inside a multi-byte character is harmless: its
				// continuation bytes are never a quote or a backslash, exactly as Python's per-character
				// skip never sees one.
				i++
				continue
			}
			if c == q {
				if strings.HasPrefix(pyLStrip(value[i+1:]), "#") {
					return value[:i+1]
				}
				return value
			}
		}
		return value // unterminated quote: kept as is
	}
	// re.split(r"\s+#", value, 1)[0].strip(): the first '#' preceded by whitespace ends the value; the
	// whitespace run before it is removed by the strip.
	prevSpace := false
	for i, r := range value {
		if r == '#' && prevSpace {
			return pyStrip(value[:i])
		}
		prevSpace = pySpace(r)
	}
	return value
}

// unquote is the value parser hermes applies after comment stripping: a value that starts and ends with
// the same quote loses it; inside "..." only \" and \\ are unescaped, in one left-to-right pass.
func unquote(v string) string {
	if len(v) < 2 || v[0] != v[len(v)-1] || (v[0] != '"' && v[0] != '\'') {
		return v
	}
	inner := v[1 : len(v)-1]
	if v[0] == '\'' || strings.IndexByte(inner, '\\') < 0 {
		return inner
	}
	var sb strings.Builder
	sb.Grow(len(inner))
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if c == '\\' && i+1 < len(inner) && (inner[i+1] == '"' || inner[i+1] == '\\') {
			i++
			c = inner[i]
		}
		sb.WriteByte(c)
	}
	return sb.String()
}
