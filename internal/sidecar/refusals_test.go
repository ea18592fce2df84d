package sidecar

import (
	"testing"
	"time"
)

func TestRefusalBudget(t *testing.T) {
	var b refusalBudget
	t0 := time.Unix(1000, 0)
	for i := range refusalBurst {
		if ok, skipped := b.take(t0); !ok || skipped != 0 {
			t.Fatalf("refusal %d of the burst: %v %d, want reported", i, ok, skipped)
		}
	}
	for range 5 {
		if ok, _ := b.take(t0); ok {
			t.Fatal("past the burst at the same instant: reported")
		}
	}
	// A tenth of a second refills one report, which says how many were held back.
	if ok, skipped := b.take(t0.Add(100 * time.Millisecond)); !ok || skipped != 5 {
		t.Fatalf("after 100 ms: %v %d, want reported with 5 held back", ok, skipped)
	}
	if ok, _ := b.take(t0.Add(100 * time.Millisecond)); ok {
		t.Fatal("the refilled report was spent, yet another was reported")
	}
	// An hour later the bucket holds no more than the burst.
	later := t0.Add(time.Hour)
	n := 0
	for {
		ok, _ := b.take(later)
		if !ok {
			break
		}
		n++
	}
	if n != refusalBurst {
		t.Fatalf("after an hour %d reports, want the burst (%d)", n, refusalBurst)
	}
}
