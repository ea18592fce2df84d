package events

import (
	"testing"
	"time"
)

// TestBroker: the ring keeps the newest events for replay and reports a gap when a client's since is gone or
// from an earlier process; a subscriber that falls behind is cut off; after Close a subscription is closed.
func TestBroker(t *testing.T) {
	b := NewBroker(3, time.Now)
	b.Publish(Event{Type: "a"}, Event{Type: "b"})
	s, backlog, gap := b.Subscribe(0, true, 2)
	if gap || len(backlog) != 2 || backlog[0].Seq != 1 || backlog[1].Type != "b" {
		t.Fatalf("backlog %+v gap %v", backlog, gap)
	}
	b.Publish(Event{Type: "c"}, Event{Type: "d"}) // ring now holds b c d; seq 1 dropped
	if e := <-s.C(); e.Type != "c" || e.Seq != 3 || e.Time == "" {
		t.Fatalf("live event %+v", e)
	}
	_, backlog, gap = b.Subscribe(0, true, 1)
	if !gap || len(backlog) != 3 || backlog[0].Type != "b" {
		t.Fatalf("after overflow: backlog %+v gap %v", backlog, gap)
	}
	_, backlog, gap = b.Subscribe(3, true, 1)
	if gap || len(backlog) != 1 || backlog[0].Type != "d" {
		t.Fatalf("since 3: backlog %+v gap %v", backlog, gap)
	}
	_, _, gap = b.Subscribe(99, true, 1)
	if !gap {
		t.Fatal("a seq from an earlier sidecar must report a gap")
	}
	// s has one buffered event (d) and a buffer of 2: two more overflow it and it is cut off.
	b.Publish(Event{Type: "e"}, Event{Type: "f"})
	n := 0
	for range s.C() {
		n++
	}
	if !s.Lost() || n != 2 {
		t.Fatalf("slow subscriber: lost=%v, drained %d", s.Lost(), n)
	}
	b.Close()
	s2, _, _ := b.Subscribe(0, false, 1)
	if _, ok := <-s2.C(); ok {
		t.Fatal("subscribe after close must return a closed channel")
	}
}
