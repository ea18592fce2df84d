package cgroup

import (
	"strconv"
	"testing"
)

// BenchmarkCreateDelete measures one worker cgroup's create and delete on this host, with no limits (the
// v2-only fast path on hybrid hosts) and with memory+pids limits (v1 directories on hybrid hosts).
func BenchmarkCreateDelete(b *testing.B) {
	h := testHost(b)
	for _, bc := range []struct {
		name string
		lim  Limits
	}{
		{"no-limits", Limits{}},
		{"memory+pids", Limits{Memory: 256 << 20, Pids: 100}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			parent := testParent(b, h)
			// The parent exists before the loop, as it does for every launch but the first.
			g, err := h.Create(parent, "warm", bc.lim)
			if err != nil {
				b.Fatal(err)
			}
			if err := g.Delete(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				g, err := h.Create(parent, "w"+strconv.Itoa(i), bc.lim)
				if err != nil {
					b.Fatal(err)
				}
				if err := g.Delete(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
