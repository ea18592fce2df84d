package worker

import (
	"testing"
)

// Only NewWorkerID's spelling is a worker id: anything else is not a record's name.
func TestIsID(t *testing.T) {
	for ref, want := range map[string]bool{
		NewWorkerID(): true, "w-0123456789ab": true,
		"w-0123456789AB": false, "W-0123456789ab": false, "w-0123456789a": false, "w-0123456789abc": false,
		"w-../../../etc": false, "w-01234/6789ab": false, "w-0123456789a\x00": false, "w-0x23456789ab": false,
		"w-+123456789ab": false, " w-0123456789ab": false, "": false,
	} {
		if got := IsID(ref); got != want {
			t.Errorf("IsID(%q) = %v, want %v", ref, got, want)
		}
	}
}
