package main

import "testing"

// --pid takes one spelling per process: canonical decimal within pid_t.
func TestPidFlag(t *testing.T) {
	for in, want := range map[string]int{
		"1": 1, "13550": 13550, "2147483647": 2147483647,
		"0": -1, "-1": -1, "+5": -1, " 5": -1, "5 ": -1, "0x10": -1, "010": -1, "0o17": -1, "1_0": -1,
		"2147483648": -1, "4294980846": -1, "99999999999999999999": -1, "": -1, "٣": -1,
	} {
		var p pidFlag
		err := p.Set(in)
		switch {
		case want < 0 && err == nil:
			t.Errorf("--pid %q accepted as %d", in, p)
		case want >= 0 && (err != nil || int(p) != want):
			t.Errorf("--pid %q = %d, %v; want %d", in, p, err, want)
		}
	}
}
