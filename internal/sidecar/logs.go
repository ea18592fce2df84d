package sidecar

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/hlaunch/hlaunch/internal/sidecar/peerlimit"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// logReader is the optional log-reading part of a backend (*launcher.Launcher has it).
type logReader interface {
	ReadLog(ctx context.Context, ref string, offset int64, follow bool, w io.Writer, begin func(start int64) error) error
}

// handleLogs: GET /v1/workers/{id}/logs[?offset=N][&follow=1]; the worker's log from offset N as
// application/octet-stream, Log-Start the oldest offset still held. With follow the answer stays open and
// streams new output until the worker has ended and its output is drained.
func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request) {
	lr, ok := s.b.(logReader)
	if !ok {
		writeError(w, fmt.Errorf("%w: this launcher reads no logs", ErrNotImplemented))
		return
	}
	q := r.URL.Query()
	var offset int64
	if v := q.Get("offset"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, fmt.Errorf("%w: offset %q: want a byte offset, 0 or more", worker.ErrInvalid, v))
			return
		}
		offset = n
	}
	var follow bool
	switch v := q.Get("follow"); v {
	case "", "0", "false":
	case "1", "true":
		follow = true
	default:
		writeError(w, fmt.Errorf("%w: follow %q: want 1 or 0", worker.ErrInvalid, v))
		return
	}
	if follow {
		uid := peerlimit.UnknownUID
		if a := connAuthFrom(r.Context()); a != nil {
			uid = a.peer.UID
		}
		release, err := s.streams.Acquire(uid)
		if err != nil {
			s.obs.LimitedAt(s.streams.Label(err), uid)
			writeLimited(w, err)
			return
		}
		defer release()
	}
	rc := http.NewResponseController(w)
	out := &streamWriter{w: w, rc: rc, timeout: s.cfg.StreamWriteTimeout, flush: follow}
	begin := func(start int64) error {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Log-Start", strconv.FormatInt(start, 10))
		w.WriteHeader(http.StatusOK)
		out.begun = true
		return out.flushNow()
	}
	err := lr.ReadLog(r.Context(), r.PathValue("id"), offset, follow, out, begin)
	if err != nil && !out.begun {
		writeError(w, err)
		return
	}
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout))
}

// streamWriter writes a log's bytes with a write deadline on each write (a reader that stops reading is
// cut off), flushed after each write when following.
type streamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	flush   bool
	begun   bool
}

func (s *streamWriter) Write(p []byte) (int, error) {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	n, err := s.w.Write(p)
	if err == nil && s.flush {
		err = s.rc.Flush()
	}
	return n, err
}

func (s *streamWriter) flushNow() error {
	if !s.flush {
		return nil
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	return s.rc.Flush()
}
