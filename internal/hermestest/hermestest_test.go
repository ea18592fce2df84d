package hermestest

import "testing"

// TestListsAreWhole: the file holds the contract's lists (22 Tier-1 names plus the rule examples, 69
// static Tier-2 names); a truncated or mis-sectioned file would make every test using it vacuous.
func TestListsAreWhole(t *testing.T) {
	if n := len(Tier1()); n < 22 {
		t.Fatalf("%d Tier-1 names", n)
	}
	if n := len(Tier2()); n < 60 {
		t.Fatalf("%d Tier-2 names", n)
	}
}
