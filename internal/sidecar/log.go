package sidecar

import (
	"io"
	"log/slog"
	"os"
	"strconv"
	"syscall"
)

// NewLogger is the sidecar's structured log on w: one line per record, key=value (log/slog's text
// format). When w is the systemd journal (JOURNAL_STREAM names its device and inode), the time is left
// out, because the journal stamps every line itself.
func NewLogger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{}
	if isJournal(w) {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// isJournal reports whether w is the stream systemd connected to the journal (sd_journal_stream_fd's
// JOURNAL_STREAM=<dev>:<ino>).
func isJournal(w io.Writer) bool {
	f, ok := w.(*os.File)
	js := os.Getenv("JOURNAL_STREAM")
	if !ok || js == "" {
		return false
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && js == strconv.FormatUint(sys.Dev, 10)+":"+strconv.FormatUint(sys.Ino, 10)
}
