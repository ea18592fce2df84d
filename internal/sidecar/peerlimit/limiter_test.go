package peerlimit

import (
	"errors"
	"strings"
	"testing"
)

// The limiter counts per uid and in all, tells a uid over its share (ErrTooMany) from a full sidecar
// (ErrBusy), gives a slot back once however often release is called, and forgets a uid that holds nothing.
func TestLimiter(t *testing.T) {
	l := New("connections", 5, 2)
	var rel []func()
	take := func(uid uint32, want error) {
		t.Helper()
		r, err := l.Acquire(uid)
		if !errors.Is(err, want) || (want == nil) != (r != nil) {
			t.Fatalf("Acquire(%d): %v, want %v", uid, err, want)
		}
		if r != nil {
			rel = append(rel, r)
		}
	}
	take(1, nil)
	take(1, nil)
	take(1, ErrTooMany) // uid 1's share is 2, whatever the total
	take(2, nil)
	take(2, nil)
	take(3, nil)
	take(3, ErrBusy) // 5 held: the total
	take(4, ErrBusy)
	if all, one := l.Counts(1); all != 5 || one != 2 {
		t.Fatalf("counts: %d in all, %d for uid 1; want 5 and 2", all, one)
	}
	rel[0]()
	rel[0]() // a second release of the same slot gives nothing back
	if all, one := l.Counts(1); all != 4 || one != 1 {
		t.Fatalf("after one release (twice): %d in all, %d for uid 1; want 4 and 1", all, one)
	}
	take(4, nil) // the freed slot goes to whoever asks
	take(1, ErrBusy)
	for _, r := range rel {
		r()
	}
	if all, _ := l.Counts(0); all != 0 || len(l.byUID) != 0 {
		t.Fatalf("after every release: %d held, %d uids remembered", all, len(l.byUID))
	}
	take(9, nil)
	take(9, nil)
	if _, err := l.Acquire(9); err == nil || !strings.Contains(err.Error(), "--max-conns-per-uid") {
		t.Fatalf("a refusal does not name its flag: %v", err)
	}
}

// The reserve: uids the limiter is not kept for (the socket group's) together hold at most the total less
// one uid's share, however many of them there are; root and the owner (uid 7 here) still get theirs, up to
// the total. A small total keeps half for the others. Without the reserve four uids at their share would
// take all 8 slots and leave root busy.
func TestLimiterReserve(t *testing.T) {
	l := New("connections", 8, 2, 0, 7)
	take := func(uid uint32, want error) {
		t.Helper()
		if _, err := l.Acquire(uid); !errors.Is(err, want) {
			t.Fatalf("Acquire(%d): %v, want %v", uid, err, want)
		}
	}
	for _, uid := range []uint32{100, 101, 102} {
		take(uid, nil)
		take(uid, nil)
	}
	take(103, ErrBusy) // 6 of 8 held by the others: the last 2 are kept
	if _, err := l.Acquire(104); err == nil || !strings.Contains(err.Error(), "kept for root") {
		t.Fatalf("the refusal at the reserve does not say so: %v", err)
	}
	take(0, nil)
	take(7, nil)
	take(0, ErrBusy) // the total
	if all, _ := l.Counts(0); all != 8 {
		t.Fatalf("%d held, want 8", all)
	}

	small := New("event streams", 3, 10, 0)
	take2 := func(uid uint32, want error) {
		t.Helper()
		if _, err := small.Acquire(uid); !errors.Is(err, want) {
			t.Fatalf("small: Acquire(%d): %v, want %v", uid, err, want)
		}
	}
	take2(100, nil)
	take2(101, nil) // 3 - min(10, 3/2) = 2 for the others
	take2(102, ErrBusy)
	take2(0, nil)
	take2(0, ErrBusy)
}

// An adopted worker's slot (hold) counts against the total whatever the bounds say, in no peer's share
// and not in the others' part; its release gives it back once.
func TestLimiterHold(t *testing.T) {
	l := New("running workers", 4, 2, 0)
	held := []func(){l.Hold(AdoptedUID), l.Hold(AdoptedUID), l.Hold(AdoptedUID)}
	if _, err := l.Acquire(100); err != nil {
		t.Fatalf("a peer's first worker beside 3 adopted of 4: %v", err)
	}
	if _, err := l.Acquire(0); !errors.Is(err, ErrBusy) {
		t.Fatalf("root's worker with 4 of 4 held: %v, want ErrBusy", err)
	}
	if err := l.flag(); err != "workers" {
		t.Fatalf("flag %q, want workers", err)
	}
	if release := l.Hold(AdoptedUID); release != nil {
		release() // over the total: counted while it exists, never refused
	}
	held[0]()
	held[0]()
	if all, _ := l.Counts(0); all != 3 {
		t.Fatalf("%d held after one adopted slot was given back (twice), want 3", all)
	}
	if _, err := l.Acquire(101); err != nil {
		t.Fatalf("a peer's worker once an adopted one ended: %v", err)
	}
}

// An adopted worker whose peer is known (hold of that uid) counts against the peer's share and the
// others' part, as its spawn's slot did.
func TestLimiterHoldPeer(t *testing.T) {
	l := New("running workers", 4, 2, 0)
	r1, r2 := l.Hold(100), l.Hold(100)
	if _, err := l.Acquire(100); !errors.Is(err, ErrTooMany) {
		t.Fatalf("a peer's spawn beside its 2 adopted workers: %v, want ErrTooMany", err)
	}
	if _, err := l.Acquire(101); !errors.Is(err, ErrBusy) {
		t.Fatalf("another peer's spawn while the others' part (2 of 4) is held: %v, want ErrBusy", err)
	}
	r1()
	r2()
	if all, _ := l.Counts(100); all != 0 {
		t.Fatalf("%d held after both were given back, want 0", all)
	}
}
