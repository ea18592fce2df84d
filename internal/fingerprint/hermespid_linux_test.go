package fingerprint

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// A hermes row's PID outside pid_t (32 bits) is malformed: 2^32 + N reached pidfd_open as PID N.
func TestHermesIdentityPIDRange(t *testing.T) {
	fp := testBoot + ":1|2"
	for _, pid := range []int{0, -1, math.MaxInt32 + 1, 1<<32 + 1234, math.MaxInt} {
		if _, v, ok := hermesIdentity(pid, fp); ok || v.State != Malformed {
			t.Errorf("hermesIdentity(%d) = %v, %v; want malformed", pid, v, ok)
		}
	}
	if id, _, ok := hermesIdentity(math.MaxInt32, fp); !ok || id.PID != math.MaxInt32 {
		t.Errorf("hermesIdentity(MaxInt32) refused")
	}
}

// FuzzParseHermesFingerprint: no input panics, and what is accepted has exactly one spelling: the
// trimmed input is "<epoch>|<start>" with the start in canonical decimal.
func FuzzParseHermesFingerprint(f *testing.F) {
	for _, s := range []string{testBoot + ":23|123456", "unverified", "", "NULL", testBoot + ":23|05", testBoot + ":2:3|5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		epoch, start, err := ParseHermesFingerprint(s)
		if err != nil {
			return
		}
		boot, pid1 := splitEpoch(epoch)
		if got := boot + ":" + strconv.FormatUint(pid1, 10) + "|" + strconv.FormatUint(start, 10); got != strings.TrimSpace(s) {
			t.Fatalf("%q accepted as %q", s, got)
		}
	})
}
