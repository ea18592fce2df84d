package fingerprint

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// statLine builds a /proc/<pid>/stat line with the given comm and start time (field 22).
func statLine(comm string, start uint64) string {
	return fmt.Sprintf("4242 (%s) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %d 2400000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n", comm, start)
}

func TestReadStartTime(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    uint64
		wantErr bool
	}{
		{"plain", statLine("sleep", 123456), 123456, false},
		{"space in comm", statLine("my worker", 77), 77, false},
		{"paren in comm", statLine("a) b (c", 78), 78, false},
		{"fake fields in comm", statLine("x) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 999", 79), 79, false},
		{"newline in comm", statLine("a\nb) c\n", 80), 80, false},
		{"empty comm", statLine("", 81), 81, false},
		{"zero start", statLine("init", 0), 0, false},
		{"max start", statLine("x", 18446744073709551615), 18446744073709551615, false},
		{"real pid 1", "1 (process_api) S 0 0 0 0 -1 4194560 39423 682521 0 606 108 198 1387 680 10 -10 13 0 23 49238016 4267 18446744073709551615 1 1 0 0 0 0 0 4096 1256 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0", 23, false},
		{"empty", "", 0, true},
		{"no parens", "4242 sleep S 1 2 3", 0, true},
		{"no close paren", "4242 (sleep S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21", 0, true},
		{"truncated", "4242 (sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", 0, true},
		{"bad start", strings.Replace(statLine("x", 5), " 5 2400000", " -5 2400000", 1), 0, true},
		{"bad pid", strings.Replace(statLine("x", 5), "4242 (", "42a (", 1), 0, true},
		{"long state", strings.Replace(statLine("x", 5), ") S ", ") SS ", 1), 0, true},
		{"too long", statLine(strings.Repeat("x", maxStatLen), 5), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadStartTime(strings.NewReader(tt.line))
			if tt.wantErr {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("ReadStartTime = %d, %v; want ErrMalformed", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ReadStartTime = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// hermesStart is hermes' naive reading (split on whitespace, index 21), kept here to document the difference.
func hermesStart(line string) string {
	f := strings.Fields(line)
	if len(f) < 22 {
		return ""
	}
	return f[21]
}

func TestReadStartTimeDiffersFromHermesOnlyForWhitespaceComm(t *testing.T) {
	if got := hermesStart(statLine("sleep", 99)); got != "99" {
		t.Fatalf("hermes reading of a plain comm = %q, want 99", got)
	}
	if got := hermesStart(statLine("my worker", 99)); got == "99" {
		t.Fatalf("hermes reading of a comm with a space unexpectedly right")
	}
}

func FuzzReadStartTime(f *testing.F) {
	f.Add("sleep", uint64(1), []byte(statLine("sleep", 1)))
	f.Add("a) b", uint64(1<<40), []byte("1 (a) b) Z"))
	f.Add("\n)\n", uint64(0), []byte(")))((("))
	f.Fuzz(func(t *testing.T, comm string, start uint64, raw []byte) {
		_, _ = ReadStartTime(strings.NewReader(string(raw))) // never panics
		if strings.ContainsRune(comm, 0) || len(comm) > 64 {
			return
		}
		got, err := ReadStartTime(strings.NewReader(statLine(comm, start)))
		if err != nil || got != start {
			t.Fatalf("comm %q: ReadStartTime = %d, %v; want %d", comm, got, err, start)
		}
	})
}
