package testutil

import (
	"strings"
	"testing"
)

// recorder stands in for a test to see what Skip does to it (pure logic: the CI rule).
type recorder struct {
	testing.TB
	failed, skipped string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.failed = format }
func (r *recorder) Skip(args ...any)                  { r.skipped = args[0].(string) }

// Under CI=true a skip fails the test (nothing may skip there); elsewhere, or with HLAUNCH_ALLOW_SKIP, it
// skips, saying why.
func TestSkipFailsUnderCI(t *testing.T) {
	for _, c := range []struct {
		ci, allow string
		fails     bool
	}{{"", "", false}, {"true", "", true}, {"true", "pkg.TestX", false}, {"1", "", false}} {
		t.Setenv("CI", c.ci)
		t.Setenv("HLAUNCH_ALLOW_SKIP", c.allow)
		r := &recorder{TB: t}
		Skip(r, "no widget")
		if c.fails && (r.failed == "" || r.skipped != "") {
			t.Errorf("CI=%q allow=%q: failed %q skipped %q, want a failure", c.ci, c.allow, r.failed, r.skipped)
		}
		if !c.fails && (r.skipped == "" || !strings.Contains(r.skipped, "no widget") || r.failed != "") {
			t.Errorf("CI=%q allow=%q: failed %q skipped %q, want a skip naming why", c.ci, c.allow, r.failed, r.skipped)
		}
	}
}
