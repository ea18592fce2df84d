package termfilter

import (
	"strings"
	"testing"
)

// BenchmarkFilter measures throughput on what a full-screen program writes (text with colours and
// cursor movement, some UTF-8) and on plain text.
func BenchmarkFilter(b *testing.B) {
	for _, c := range []struct{ name, in string }{
		{"tui", strings.Repeat("\x1b[12;1H\x1b[1;34m~\x1b[0m  some code(\x1b[38;5;208marg\x1b[m) \xe2\x94\x82 \x1b[K\r\n", 400)},
		{"text", strings.Repeat("the quick brown fox jumps over the lazy dog 0123456789\r\n", 600)},
	} {
		b.Run(c.name, func(b *testing.B) {
			in := []byte(c.in)
			f, dst := New(Options{}), make([]byte, 0, len(in))
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				dst = f.Append(dst[:0], in)
			}
		})
	}
}
