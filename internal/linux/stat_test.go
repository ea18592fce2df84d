package linux

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// statLine builds a /proc/<pid>/stat line with the given comm and start time (field 22); fields 50 and 51
// (env_start, env_end) are 5000 and 5100.
func statLine(comm string, start uint64) string {
	return fmt.Sprintf("4242 (%s) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %d 2400000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 5000 5100 0\n", comm, start)
}

func startOf(line string) (uint64, error) {
	st, err := ReadStat(strings.NewReader(line))
	return st.Start, err
}

func TestReadStatStartTime(t *testing.T) {
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
		{"too long", statLine(strings.Repeat("x", MaxStatLen), 5), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := startOf(tt.line)
			if tt.wantErr {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("ReadStat = %d, %v; want ErrMalformed", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ReadStat = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestStatStateAndFields(t *testing.T) {
	st, err := ParseStat([]byte(strings.Replace(statLine("a) Z (b", 9), ") S ", ") Z ", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if st.State != 'Z' || !st.Dead() {
		t.Fatalf("state %q, Dead %v; want Z, true", st.State, st.Dead())
	}
	for n, want := range map[int]uint64{4: 1, 22: 9, 50: 5000, 51: 5100} {
		if got, err := st.Field(n); err != nil || got != want {
			t.Errorf("Field(%d) = %d, %v; want %d", n, got, err, want)
		}
	}
	for _, n := range []int{0, 2, 3, 53, 1000} {
		if _, err := st.Field(n); !errors.Is(err, ErrMalformed) {
			t.Errorf("Field(%d): %v, want ErrMalformed", n, err)
		}
	}
	// Field 8 (tty_nr) is -1 in statLine: not an unsigned number.
	if _, err := st.Field(8); !errors.Is(err, ErrMalformed) {
		t.Errorf("Field(8) of -1: %v, want ErrMalformed", err)
	}
	if live, _ := ParseStat([]byte(statLine("x", 1))); live.Dead() {
		t.Error("a sleeping process reads as dead")
	}
}

func TestParseStatKeepsNoReferenceToItsInput(t *testing.T) {
	b := []byte(statLine("x", 1))
	st, err := ParseStat(b)
	if err != nil {
		t.Fatal(err)
	}
	copy(b, strings.Repeat("9", len(b)))
	if v, err := st.Field(50); err != nil || v != 5000 {
		t.Fatalf("Field(50) after the buffer was reused = %d, %v; want 5000", v, err)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add("sleep", uint64(1), []byte(statLine("sleep", 1)))
	f.Add("a) b", uint64(1<<40), []byte("1 (a) b) Z"))
	f.Add("\n)\n", uint64(0), []byte(")))((("))
	f.Fuzz(func(t *testing.T, comm string, start uint64, raw []byte) {
		if st, err := ParseStat(raw); err == nil { // never panics
			for n := 0; n < 60; n++ {
				_, _ = st.Field(n)
			}
		}
		if strings.ContainsRune(comm, 0) || len(comm) > 64 {
			return
		}
		got, err := startOf(statLine(comm, start))
		if err != nil || got != start {
			t.Fatalf("comm %q: start = %d, %v; want %d", comm, got, err, start)
		}
	})
}

// Exiting is PF_EXITING in field 9 (flags), or a dead state: a process tearing down its address space is
// still R or D, and no longer in its cgroup's cgroup.procs.
func TestStatExiting(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want bool
	}{
		{"running", statLine("x", 1), false},
		{"PF_EXITING", strings.Replace(statLine("x", 1), " 4194560 ", " 4194564 ", 1), true},
		{"zombie", strings.Replace(statLine("x", 1), ") S ", ") Z ", 1), true},
	} {
		st, err := ParseStat([]byte(tc.line))
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Exiting(); got != tc.want {
			t.Errorf("%s: Exiting() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
