package termfilter

import "io"

// Writer filters what is written to it through a Filter into an underlying writer (a terminal).
type Writer struct {
	f   Filter
	w   io.Writer
	out []byte // reused between writes: what of the last one passed
}

// NewWriter returns a Writer that writes to w what of its input passes with opt.
func NewWriter(w io.Writer, opt Options) *Writer {
	return &Writer{f: Filter{opt: opt}, w: w}
}

// Write filters p and writes what passes to the underlying writer. It returns len(p) when that write
// succeeds (what was dropped or is held counts as written), else 0 and the writer's error.
func (w *Writer) Write(p []byte) (int, error) {
	w.out = w.f.Append(w.out[:0], p)
	if len(w.out) == 0 {
		return len(p), nil
	}
	if _, err := w.w.Write(w.out); err != nil {
		return 0, err
	}
	return len(p), nil
}
