package systemd

import (
	"errors"
	"strings"
	"testing"
)

func TestValidUnitName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"hermes-worker-kanban-7-run-3", true},
		{"hermes-worker-kanban-7-run-3.scope", true},
		{"proc_0123456789ab", true},
		{"cron-nightly-exec-4", true},
		{"hlaunch-default-01HZX", true},
		{"a:b_c.d-e", true},
		{`x\x2dy`, true},
		{"gw.service", true},
		{"app.slice", true},
		{strings.Repeat("a", 249), true},
		{strings.Repeat("a", 250), false}, // 250 + ".scope" > 255
		{"", false},
		{".scope", false},
		{"-x", false},
		{".x", false},
		{"a@b", false},
		{"a b", false},
		{"a/b", false},
		{"ä", false},
		{"a\n", false},
	}
	for _, tc := range tests {
		err := ValidUnitName(tc.name)
		if tc.ok != (err == nil) {
			t.Errorf("ValidUnitName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBadUnitName) {
			t.Errorf("ValidUnitName(%q) = %v, not ErrBadUnitName", tc.name, err)
		}
	}
}

func TestScopeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"hermes-worker-kanban-7-run-3", "hermes-worker-kanban-7-run-3.scope"},
		{"x.scope", "x.scope"},
		{"x.service", ""},
		{"a@b", ""},
	}
	for _, tc := range tests {
		got, err := ScopeName(tc.in)
		if (tc.want == "") != (err != nil) || got != tc.want {
			t.Errorf("ScopeName(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func FuzzValidUnitName(f *testing.F) {
	for _, s := range []string{"hermes-worker-kanban-7-run-3", "proc_0123456789ab", "x.scope", "-", "a@b.service"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidUnitName(s) != nil {
			return
		}
		n, err := ScopeName(s)
		if err != nil {
			return // a valid name of another unit type
		}
		if len(n) > maxUnitNameLen || !strings.HasSuffix(n, ".scope") {
			t.Fatalf("ScopeName(%q) = %q", s, n)
		}
		for _, c := range []byte(strings.TrimSuffix(n, ".scope")) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(":_.-\\", c) >= 0) {
				t.Fatalf("ScopeName(%q) = %q holds %q", s, n, c)
			}
		}
		if n[0] == '-' || n[0] == '.' {
			t.Fatalf("ScopeName(%q) = %q starts with %q", s, n, n[0])
		}
	})
}
