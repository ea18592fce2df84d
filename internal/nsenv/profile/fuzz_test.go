package profile

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzParseDotenv(f *testing.F) {
	for _, s := range []string{
		"", "A=1\n", "export A='x' # c\n", "\xEF\xBB\xBFK=\"a\\\"b\" # c", "A=caf\xe9\x85B=2", "A=foo#bar\r\nB= v #x",
		"#c\n=1\nx\n  export   Y = \"un", "A='\nB=\"\\\\\"", "K=\u2028V=\u3000#c", "\x1c\x1d\x1e\x1f=\x1f",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := ParseDotenv(bytes.NewReader(data))
		if !utf8.Valid(bytes.TrimPrefix(data, []byte(utf8BOM))) {
			if !errors.Is(err, ErrNotUTF8) || entries != nil {
				t.Fatalf("not UTF-8 but %v, %d entries", err, len(entries))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		again, _ := parseDotenv(data)
		if len(again) != len(entries) {
			t.Fatal("not deterministic")
		}
		prev := 0
		for i, e := range entries {
			if e != again[i] {
				t.Fatal("not deterministic")
			}
			if e.Key == "" || strings.Contains(e.Key, "=") {
				t.Fatalf("bad key %q", e.Key)
			}
			if pyStrip(e.Key) != e.Key {
				t.Fatalf("key %q not stripped", e.Key)
			}
			if e.Key[0] == '#' && !strings.HasPrefix(pyStrip(firstLine(t, data, e.Line)), "export ") {
				t.Fatalf("comment line parsed as %q", e.Key)
			}
			if !utf8.ValidString(e.Key) || !utf8.ValidString(e.Value) {
				t.Fatalf("invalid UTF-8 out: %q=%q", e.Key, e.Value)
			}
			for _, s := range []string{e.Key, e.Value} {
				for _, r := range s {
					if isLineBreak(r) {
						t.Fatalf("line break inside %q", s)
					}
				}
			}
			if e.Line <= prev {
				t.Fatalf("line numbers not increasing: %d after %d", e.Line, prev)
			}
			prev = e.Line
			if len(e.Value) > len(data)*2 {
				t.Fatalf("value longer than the input could make")
			}
		}
	})
}

// firstLine returns line n (1-based) of data, split as the tokenizer splits it.
func firstLine(t *testing.T, data []byte, n int) string {
	t.Helper()
	data = bytes.TrimPrefix(data, []byte(utf8BOM))
	text := string(data)
	for i := 1; len(text) > 0; i++ {
		line, rest := nextLine(text)
		if i == n {
			return line
		}
		text = rest
	}
	t.Fatalf("no line %d", n)
	return ""
}

func FuzzNormalizeName(f *testing.F) {
	for _, s := range []string{"b", " Default ", "../x", "hermes", "\u212aate", "a_b-c", strings.Repeat("z", 64), ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, err := NormalizeName(raw)
		if err != nil {
			if n != "" {
				t.Fatalf("name %q with error", n)
			}
			return
		}
		if !validName(n) || strings.ContainsAny(n, "/.") {
			t.Fatalf("%q -> %q outside the grammar", raw, n)
		}
		if n2, err := NormalizeName(n); err != nil || n2 != n {
			t.Fatalf("not idempotent: %q -> %q, %v", n, n2, err)
		}
		switch n {
		case "hermes", "test", "tmp", "root", "sudo":
			t.Fatalf("reserved %q accepted", n)
		}
	})
}
