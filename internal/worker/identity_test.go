package worker

import (
	"strings"
	"testing"
)

// TestParseID: decimal digits only, 0..4294967294, one spelling per id. 4294967296 must not wrap to 0
// (root), and 4294967295 is (uid_t)-1, "unchanged" to setresuid.
func TestParseID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint32
		err  string
	}{
		{"0", 0, ""}, {"1", 1, ""}, {"65534", 65534, ""}, {"4294967294", 4294967294, ""},
		{"4294967295", 0, "out of range"}, {"4294967296", 0, "out of range"}, {"18446744073709551616", 0, "not an id"},
		{"", 0, "not an id"}, {"-1", 0, "not an id"}, {"+1", 0, "not an id"}, {"01", 0, "leading zero"},
		{"00", 0, "leading zero"}, {" 1", 0, "not an id"}, {"1 ", 0, "not an id"}, {"1\n", 0, "not an id"},
		{"0x10", 0, "not an id"}, {"1_000", 0, "not an id"}, {"１", 0, "not an id"}, {"1e3", 0, "not an id"},
	} {
		got, err := ParseID(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseID(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), IDAccepted) {
			t.Errorf("ParseID(%q) = %d, %v; want an error %q naming the accepted form", tc.in, got, err, tc.err)
		}
	}
}

func TestParseUser(t *testing.T) {
	if u, g, err := ParseUser("1001:1002"); err != nil || u != 1001 || g != 1002 {
		t.Errorf("ParseUser(1001:1002) = %d, %d, %v", u, g, err)
	}
	for _, in := range []string{"4294967296:4294967296", "0:4294967295", "1001", ":1", "1:", "1:2:3", "1 :2", "-0:0"} {
		if _, _, err := ParseUser(in); err == nil {
			t.Errorf("ParseUser(%q) accepted", in)
		}
	}
}

// FuzzParseID: whatever ParseID accepts is canonical decimal in range.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"0", "4294967294", "4294967295", "4294967296", "-1", "+1", "01", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseID(s)
		if err != nil {
			return
		}
		if v > MaxID || strings.TrimLeft(s, "0123456789") != "" || (len(s) > 1 && s[0] == '0') {
			t.Fatalf("ParseID(%q) = %d accepted", s, v)
		}
	})
}
