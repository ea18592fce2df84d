package termfilter

import "io"

// Writer filters what is written to it through a Filter into an underlying writer (a terminal), and
// answers the primary device attributes queries it drops itself.
type Writer struct {
	f      Filter
	w      io.Writer
	answer io.Writer
	out    []byte // reused between writes: what of the last one passed
}

// NewWriter returns a Writer that writes to w what of its input passes with opt, and DAAnswer to answer
// (the program's own input; nil: nowhere) for each primary device attributes query, after what preceded
// the query: the answer is the relay's, constant, and never reaches w's terminal.
func NewWriter(w, answer io.Writer, opt Options) *Writer {
	return &Writer{f: Filter{opt: opt}, w: w, answer: answer}
}

// Close ends the stream: it writes to the underlying writer what turns off the input modes the program
// may have left on (Filter.AppendRestore), so that the terminal types no report or key the program asked
// for into its next reader's input. It does not close the underlying writer.
func (w *Writer) Close() error {
	w.out = w.f.AppendRestore(w.out[:0])
	if len(w.out) == 0 {
		return nil
	}
	_, err := w.w.Write(w.out)
	return err
}

// Write filters p and writes what passes to the underlying writer. It returns len(p) when that write
// succeeds (what was dropped or is held counts as written), else 0 and the writer's error. An answer
// that cannot be written is not retried: the program goes on without it, as with a terminal that gives
// none.
func (w *Writer) Write(p []byte) (int, error) {
	w.out = w.f.Append(w.out[:0], p)
	if len(w.out) > 0 {
		if _, err := w.w.Write(w.out); err != nil {
			return 0, err
		}
	}
	for n := w.f.TakeDA(); n > 0 && w.answer != nil; n-- {
		if _, err := io.WriteString(w.answer, DAAnswer); err != nil {
			break
		}
	}
	return len(p), nil
}
