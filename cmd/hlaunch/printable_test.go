package main

import (
	"strings"
	"testing"
	"unicode"
)

func TestPrintable(t *testing.T) {
	for _, tt := range []struct{ in, want, line string }{
		{"plain value", "plain value", "plain value"},
		{"café ü €", "café ü €", "café ü €"},
		{"\x1b]0;pwned\a", `"\x1b]0;pwned\a"`, `\x1b]0;pwned\a`},
		{"a\x1b[2Jb", `"a\x1b[2Jb"`, `a\x1b[2Jb`},
		{"csi\u009b31m", `"csi\u009b31m"`, `csi\u009b31m`},
		{"rtl\u202egnp.exe", `"rtl\u202egnp.exe"`, `rtl\u202egnp.exe`},
		{"tab\there", `"tab\there"`, `tab\there`},
		{"del\x7f", `"del\x7f"`, `del\x7f`},
		{"bad\xff", `"bad\xff"`, `bad\xff`},
		{"zw\u200bsp", `"zw\u200bsp"`, `zw\u200bsp`},
	} {
		if got := printable(tt.in); got != tt.want {
			t.Errorf("printable(%q) = %s, want %s", tt.in, got, tt.want)
		}
		if got := printableLine(tt.in); got != tt.line {
			t.Errorf("printableLine(%q) = %s, want %s", tt.in, got, tt.line)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	f.Add("\x1b]52;c;aGk=\a")
	f.Add("a\u202eb\xff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{printable(s), printableLine(s)} {
			for _, r := range out {
				if r != ' ' && !unicode.IsPrint(r) {
					t.Fatalf("%q shown as %q, which holds %U", s, out, r)
				}
			}
			if clean(s) && out != s {
				t.Fatalf("clean %q changed to %q", s, out)
			}
		}
		if !clean(s) && !strings.HasPrefix(printable(s), `"`) {
			t.Fatalf("escaped %q not marked as quoted", s)
		}
	})
}
