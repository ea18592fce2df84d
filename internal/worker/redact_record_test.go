package worker

import (
	"fmt"
	"testing"
)

func TestRecordedArgv(t *testing.T) {
	short := []string{"sh", "-c", "true"}
	if got := RecordedArgv(short); len(got) != 3 || got[2] != "true" {
		t.Errorf("a short argv: %q, want it whole", got)
	}
	big := make([]byte, MaxRecordedArgv)
	got := RecordedArgv([]string{"sh", "-c", string(big), "x"})
	n := 0
	for _, a := range got {
		n += len(a)
	}
	want := fmt.Sprintf("...(2 more arguments, %d bytes, not recorded)", MaxRecordedArgv+1)
	if len(got) != 3 || got[0] != "sh" || got[1] != "-c" || got[2] != want || n > MaxRecordedArgv+len(want) {
		t.Errorf("a long argv: %d elements %.80q; want sh, -c and %q", len(got), got, want)
	}
}
