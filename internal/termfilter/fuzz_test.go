package termfilter

import (
	"bytes"
	"testing"
)

// FuzzFilter checks, for any input and either Options: the output is a subsequence of the input
// (nothing is added or reordered); splitting the input at any offset gives the same output (no sequence
// is lost or let through across a buffer boundary); the output filtered again is the same (it is made
// only of what passes whole); as many DA queries are counted, and the same input modes restored, byte
// by byte as whole; and no introducer of what is always dropped is in it.
func FuzzFilter(f *testing.F) {
	for _, c := range append(append([]filterCase{}, passCases...), dropCases...) {
		f.Add([]byte(c.in), false)
		f.Add([]byte(c.in), true)
	}
	f.Add([]byte("\x1b]2;title\x07\x1b]0;x\x1b\\"), true)
	f.Fuzz(func(t *testing.T, in []byte, titles bool) {
		opt := Options{Titles: titles}
		whole := New(opt)
		out := whole.Append(nil, in)
		da, restore := whole.TakeDA(), whole.AppendRestore(nil)
		if !subsequence(out, in) {
			t.Fatalf("%q: output %q is not a subsequence of the input", in, out)
		}
		// Split at every offset (at most 256 of them, evenly spread, for a long input), then in one-byte
		// pieces: every offset at once.
		step := max(1, len(in)/256)
		for i := 0; i < len(in); i += step {
			g := New(opt)
			if split := g.Append(g.Append(nil, in[:i]), in[i:]); !bytes.Equal(split, out) {
				t.Fatalf("%q split at %d: %q, unsplit %q", in, i, split, out)
			}
		}
		g, bytewise := New(opt), []byte(nil)
		for i := range in {
			bytewise = g.Append(bytewise, in[i:i+1])
		}
		if !bytes.Equal(bytewise, out) {
			t.Fatalf("%q byte by byte: %q, unsplit %q", in, bytewise, out)
		}
		if n := g.TakeDA(); n != da {
			t.Fatalf("%q byte by byte: %d DA queries, unsplit %d", in, n, da)
		}
		if r := g.AppendRestore(nil); !bytes.Equal(r, restore) {
			t.Fatalf("%q byte by byte: restore %q, unsplit %q", in, r, restore)
		}
		if again := New(opt).Append(nil, out); !bytes.Equal(again, out) {
			t.Fatalf("%q: output %q filtered again is %q", in, out, again)
		}
		never := [][]byte{{0x05}, {esc, 'P'}, {esc, '_'}, {esc, '^'}, {esc, 'X'}, {esc, 'Z'}, {esc, '%'}}
		if !titles {
			never = append(never, []byte{esc, ']'})
		}
		for _, x := range never {
			if bytes.Contains(out, x) {
				t.Fatalf("%q: output %q holds %q", in, out, x)
			}
		}
		for i := 0; i+1 < len(out); i++ {
			if out[i] == 0xc2 && out[i+1] >= 0x80 && out[i+1] <= 0x9f {
				t.Fatalf("%q: output %q holds a C1 control at %d", in, out, i)
			}
		}
	})
}

// subsequence reports whether a is b with bytes left out.
func subsequence(a, b []byte) bool {
	for _, c := range b {
		if len(a) > 0 && a[0] == c {
			a = a[1:]
		}
	}
	return len(a) == 0
}
