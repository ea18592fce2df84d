package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/hlaunch/hlaunch/internal/doctor"
	"github.com/hlaunch/hlaunch/internal/sidecar/events"
	"github.com/hlaunch/hlaunch/internal/sidecar/peerlimit"
	"github.com/hlaunch/hlaunch/internal/version"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Handler returns the API's HTTP handler: peer check, JSON errors for unknown paths and methods, routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/workers", s.handleSpawn)
	mux.HandleFunc("GET /v1/workers", s.handleList)
	mux.HandleFunc("GET /v1/workers/{id}", s.handleGet)
	mux.HandleFunc("POST /v1/workers/{id}/signal", s.handleSignal)
	mux.HandleFunc("POST /v1/workers/{id}/stop", s.handleStop)
	mux.HandleFunc("GET /v1/workers/{id}/wait", s.handleWait)
	mux.HandleFunc("GET /v1/workers/{id}/logs", s.handleLogs)
	mux.HandleFunc("GET /v1/events", s.handleEvents)
	mux.HandleFunc("GET /v1/health", s.handleHealth)
	mux.HandleFunc("GET /v1/doctor", s.handleDoctor)
	mux.Handle("GET /v1/metrics", s.obs.Handler())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := connAuthFrom(r.Context()); a != nil && a.over != nil {
			// Over a limit: answered before anything is parsed, and the connection closed after it.
			writeLimited(w, a.over)
			return
		}
		if a := connAuthFrom(r.Context()); a == nil || !a.ok {
			// Refused before anything is parsed; the connection is not kept for another try.
			w.Header().Set("Connection", "close")
			reason := "no peer credentials"
			if a != nil {
				reason = a.reason
			}
			writeError(w, fmt.Errorf("%w: %s", ErrForbidden, reason))
			return
		}
		// A write deadline an event stream left on the connection does not carry over to this request.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		hasBody := r.Body != http.NoBody
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
		if hasBody {
			r.Body = s.bodyDeadline(w, r.Body)
		}
		if a := connAuthFrom(r.Context()); a.fds != nil {
			defer endRequest(a.fds, r.Body, hasBody)
		}
		if _, pattern := mux.Handler(r); pattern == "" {
			writeError(w, routeError(mux, r))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// endRequest closes what descriptors the request passed that its handler did not take: they belong to
// this request, not to the connection (a later "stdio": "inherit" spawn on it that passed none is refused,
// as on a fresh connection). What the handler left of the body is read first (within --max-body and
// --body-timeout, else net/http closes the connection), since descriptors may come with any of its bytes.
func endRequest(c *peerlimit.Conn, body io.Reader, hasBody bool) {
	if hasBody {
		_, _ = io.Copy(io.Discard, body)
	}
	c.DropFDs()
}

// writeLimited answers a request over a limit (ErrTooMany: 429, ErrBusy: 503) with Retry-After, and closes
// the connection after the answer.
func writeLimited(w http.ResponseWriter, err error) {
	w.Header().Set("Connection", "close")
	w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
	writeError(w, err)
}

// bodyDeadline gives reading body Config.BodyTimeout: the connection's read deadline is set now and cleared
// once the body has been read to its end, so that a long-lived answer (/wait) is not cut by it.
// A read past the deadline fails with ErrSlowBody.
func (s *Server) bodyDeadline(w http.ResponseWriter, body io.ReadCloser) io.ReadCloser {
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) != nil {
		return body
	}
	return &deadlineBody{ReadCloser: body, rc: rc, timeout: s.cfg.BodyTimeout}
}

type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	done    bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case errors.Is(err, io.EOF) && !b.done:
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The deadline stays: what net/http would read of the rest fails at once, and the answer closes
		// the connection (writeError).
		err = fmt.Errorf("%w: the body was not received within %s (--body-timeout)", ErrSlowBody, b.timeout)
	}
	return n, err
}

// routeError tells an unknown path (404) from a known path with the wrong method (405), both as JSON.
func routeError(mux *http.ServeMux, r *http.Request) error {
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := mux.Handler(probe); p != "" {
			return fmt.Errorf("%w: %s %s", ErrMethod, r.Method, r.URL.Path)
		}
	}
	return fmt.Errorf("%w: %s %s", ErrNoRoute, r.Method, r.URL.Path)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // an argv or path holding '<' or '&' is answered as written, as the CLI's --json does
	_ = enc.Encode(v)        // the client is gone if this fails; nothing else to tell it
}

func writeError(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrSlowBody) {
		w.Header().Set("Connection", "close") // the rest of the body is not read: the connection is not reused
	}
	if errors.Is(err, ErrTooMany) || errors.Is(err, ErrBusy) {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfter)) // a slot frees when its holder's worker or connection ends
	}
	// A spec the launcher refused is worded with its JSON fields, not the exec flags (worker.SpecMessage).
	d := errDetail(err)
	writeJSON(w, statusOf(d.Code), errorBody{Error: d})
}

// spawnTimeout bounds one launch (a systemd job that never finishes, a stuck key lock).
const spawnTimeout = 2 * time.Minute

// handleSpawn: POST /v1/workers, body = worker.Spec; 201 with the receipt. With an Idempotency-Key
// header the spawn is idempotent (spawnIdempotent).
func (s *Server) handleSpawn(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r.Body)
	if err != nil {
		writeError(w, err)
		return
	}
	var spec worker.Spec
	if err := decodeStrict(bytes.NewReader(body), &spec, false); err != nil {
		writeError(w, err)
		return
	}
	if spec.Seccomp == worker.SeccompOff && !s.cfg.AllowSeccompOff {
		writeError(w, fmt.Errorf("%w: seccomp %q: this sidecar does not turn the system-call filter off (it was not started with --allow-seccomp-off)", worker.ErrInvalid, spec.Seccomp))
		return
	}
	// Every sidecar spawn is detached: the worker's parent is its shim, never this process, so a sidecar
	// restart cannot take it down or lose its exit status.
	spec.Detach = true
	// A client that hangs up mid-spawn must not leave a half-made worker: the launch runs to its end (bounded)
	// and the worker is tracked and announced even if nobody reads this answer.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), spawnTimeout)
	defer cancel()
	stdio, closeStdio, err := passedStdio(r, spec)
	if err != nil {
		writeError(w, err)
		return
	}
	defer closeStdio()
	if _, ok := r.Header[headerIdemKey]; ok {
		s.spawnIdempotent(ctx, w, peerUID(r), r.Header.Get(headerIdemKey), body, spec, stdio)
		return
	}
	rc, err := s.spawn(ctx, peerUID(r), spec, stdio, nil)
	if err != nil {
		writeError(w, err)
		return
	}
	writeReceipt(w, rc, false)
}

// startWorker starts spec in a warm slot when one is ready and fits, else the ordinary way; before, when
// not nil, sees the worker's id first.
func (s *Server) startWorker(ctx context.Context, spec worker.Spec, stdio worker.Stdio, before func(string) error) (*worker.Receipt, error) {
	if s.pool != nil && spec.Stdio != worker.StdioInherit {
		if rc, ok, err := s.pool.Start(ctx, spec, before); ok {
			return rc, err
		}
	}
	if before == nil {
		return s.b.StartWith(ctx, spec, stdio)
	}
	id := worker.NewWorkerID()
	if err := before(id); err != nil {
		return nil, err
	}
	return s.b.StartWithID(ctx, spec, stdio, id)
}

// MaxPage is the largest page GET /v1/workers answers (limit).
const MaxPage = 10000

// NextAfterHeader names the next page's cursor (after) in the answer to a full page of GET /v1/workers.
const NextAfterHeader = "Hlaunch-Next-After"

// handleList: GET /v1/workers[?state=running][&limit=N][&after=ID]; every record, verified now, or one
// page of them: at most limit records of the workers whose ids sort after after. A full page names the
// cursor of the next one in the NextAfterHeader header (the state filter applies within the page).
func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 0
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > MaxPage {
			writeError(w, fmt.Errorf("%w: limit %q is not a count of records from 1 to %d", worker.ErrInvalid, q.Get("limit"), MaxPage))
			return
		}
		limit = n
	}
	after := q.Get("after")
	if after != "" && !worker.IsID(after) {
		writeError(w, fmt.Errorf("%w: after %q is not a worker id (w-<12 hex>)", worker.ErrInvalid, after))
		return
	}
	s.writeList(r.Context(), w, after, limit, q.Get("state"))
}

// listPage is how many records GET /v1/workers reads and holds at once.
const listPage = 32

// writeList answers GET /v1/workers: the records of the workers whose ids sort after after, at most
// limit of them (0: every one), read and written a page (listPage) at a time, so that what one answer
// holds while its client reads slowly, or not at all, is one page however many records are kept or
// asked for. A full page's cursor (NextAfterHeader) is the limit-th id after after: it is known from the
// directory's names before a record is read. A failure before the first byte is an error answer; a
// failure after it cuts the answer off (its JSON never ends), so a client never takes a part of the list
// for all of it.
func (s *Server) writeList(ctx context.Context, w http.ResponseWriter, after string, limit int, state string) {
	last, err := s.pageEnd(ctx, after, limit)
	if err != nil {
		writeError(w, err)
		return
	}
	next := func(after string, read int) ([]worker.Record, error) {
		n := listPage
		if limit > 0 {
			n = min(n, limit-read)
		}
		if n <= 0 {
			return nil, nil
		}
		return s.b.ListPage(ctx, after, n)
	}
	recs, err := next(after, 0)
	if err != nil {
		writeError(w, err)
		return
	}
	if last != "" {
		w.Header().Set(NextAfterHeader, last)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	lw := &listWriter{last: last, state: state}
	lw.enc = json.NewEncoder(&lw.buf)
	lw.enc.SetEscapeHTML(false) // as writeJSON
	lw.buf.WriteByte('[')
	for len(recs) > 0 {
		more := lw.add(recs)
		if _, err := w.Write(lw.buf.Bytes()); err != nil {
			return // the client is gone
		}
		lw.buf.Reset()
		if !more {
			break
		}
		if recs, err = next(recs[len(recs)-1].ID, lw.read); err != nil {
			s.logf("sidecar: list of workers cut off: %v", err)
			panic(http.ErrAbortHandler)
		}
	}
	lw.buf.WriteString("]\n")
	_, _ = w.Write(lw.buf.Bytes())
}

// pageEnd is the last id a page of limit records after after may hold: the limit-th id of the
// directory's names after after, or "" when limit is 0 or they all fit.
func (s *Server) pageEnd(ctx context.Context, after string, limit int) (string, error) {
	if limit <= 0 {
		return "", nil
	}
	ids, err := s.b.IDs(ctx)
	if err != nil {
		return "", err
	}
	if ids = ids[sort.SearchStrings(ids, after+"\x00"):]; len(ids) >= limit {
		return ids[limit-1], nil
	}
	return "", nil
}

// listWriter encodes a list's records into buf, one read page at a time.
type listWriter struct {
	last, state string // the page's last id ("" none), the state filter ("" none)
	buf         bytes.Buffer
	enc         *json.Encoder
	read        int // records read so far, the filtered ones included
	some        bool
}

// add encodes recs that are within the page and pass the filter; more is false once the page's last
// record is reached or passed (a record before it may have been removed while the page was read).
func (lw *listWriter) add(recs []worker.Record) (more bool) {
	for i := range recs {
		if lw.last != "" && recs[i].ID > lw.last {
			return false
		}
		lw.read++
		if lw.state != "" && string(recs[i].State) != lw.state {
			continue
		}
		if lw.some {
			lw.buf.WriteByte(',')
		}
		lw.some = true
		if err := lw.enc.Encode(&recs[i]); err != nil {
			panic(http.ErrAbortHandler)
		}
		lw.buf.Truncate(lw.buf.Len() - 1) // Encode's newline
	}
	return lw.last == "" || recs[len(recs)-1].ID < lw.last
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	rec, err := s.b.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

// signalResponse is the answer to a delivered signal.
type signalResponse struct {
	ID     string `json:"id"`
	Signal string `json:"signal"`
	All    bool   `json:"all"`
}

func (s *Server) handleSignal(w http.ResponseWriter, r *http.Request) {
	var req signalRequest
	if err := decodeStrict(r.Body, &req, true); err != nil {
		writeError(w, err)
		return
	}
	sig, err := parseSignal(req.Signal)
	if err != nil {
		writeError(w, err)
		return
	}
	id := r.PathValue("id")
	if err := s.b.Signal(r.Context(), id, sig, req.All); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, signalResponse{ID: id, Signal: worker.SignalName(sig), All: req.All})
}

func (s *Server) handleStop(w http.ResponseWriter, r *http.Request) {
	var req stopRequest
	if err := decodeStrict(r.Body, &req, true); err != nil {
		writeError(w, err)
		return
	}
	grace, err := parseDuration("grace", req.Grace, DefaultGrace)
	if err != nil {
		writeError(w, err)
		return
	}
	rec, err := s.b.Stop(r.Context(), r.PathValue("id"), grace)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

// handleWait: GET /v1/workers/{id}/wait[?timeout=5s]; the final record, or 408 timeout while it runs.
func (s *Server) handleWait(w http.ResponseWriter, r *http.Request) {
	timeout, err := parseDuration("timeout", r.URL.Query().Get("timeout"), 0)
	if err != nil {
		writeError(w, err)
		return
	}
	ctx := r.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	rec, err := s.waitEnd(ctx, r.PathValue("id"))
	if err != nil {
		if ctx.Err() != nil && r.Context().Err() == nil {
			err = fmt.Errorf("%w after %s", ErrTimeout, timeout)
		}
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

// handleEvents: GET /v1/events[?since=SEQ]; NDJSON, one event per line, flushed as it happens. Without
// since only new events are sent; since=0 replays the whole ring first.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var since uint64
	replay := q.Has("since")
	if replay {
		n, err := strconv.ParseUint(q.Get("since"), 10, 64)
		if err != nil {
			writeError(w, fmt.Errorf("%w: since %q is not a sequence number", worker.ErrInvalid, q.Get("since")))
			return
		}
		since = n
	}
	heartbeat, err := parseHeartbeat(q.Get("heartbeat"))
	if err != nil {
		writeError(w, err)
		return
	}
	if _, ok := w.(http.Flusher); !ok {
		writeError(w, errors.New("streaming unsupported"))
		return
	}
	uid := peerUID(r)
	release, err := s.streams.Acquire(uid)
	if err != nil {
		s.obs.LimitedAt(s.streams.Label(err), uid)
		writeLimited(w, err)
		return
	}
	defer release()
	sub, backlog, gap := s.events.Subscribe(since, replay, s.cfg.StreamQueue)
	defer s.events.Unsubscribe(sub)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	// Every write has StreamWriteTimeout: a reader that stops reading fills the socket's buffer, and the
	// stream is then cut off rather than held (with its queue) for as long as that reader likes.
	rc := http.NewResponseController(w)
	// The end of the answer (its last chunk, written after this returns) is bounded too; the next request
	// on the connection starts without a deadline (Handler).
	defer func() { _ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout)) }()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	write := func(e events.Event) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout))
		return enc.Encode(e) == nil
	}
	send := func(e events.Event) bool { return write(e) && rc.Flush() == nil }
	if gap {
		write(events.Event{Type: events.Lost, Time: s.now().UTC().Format(time.RFC3339Nano),
			Reason: "events before the backlog were dropped or came from an earlier sidecar; re-list workers"})
	}
	for _, e := range backlog {
		if !write(e) {
			return
		}
	}
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout))
	if rc.Flush() != nil {
		return
	}
	// A heartbeat after every idle period: a client tells a quiet stream from a dead one without a poll.
	idle := time.NewTimer(heartbeat)
	defer idle.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-idle.C:
			if !send(events.Event{Type: events.Heartbeat, Time: s.now().UTC().Format(time.RFC3339Nano)}) {
				return
			}
			idle.Reset(heartbeat)
		case e, ok := <-sub.C():
			if !ok {
				if sub.Lost() {
					send(events.Event{Type: events.Lost, Time: s.now().UTC().Format(time.RFC3339Nano),
						Reason: fmt.Sprintf("this stream fell behind (more than %d events unread); re-list workers and reconnect with since", s.cfg.StreamQueue)})
				}
				return
			}
			if !send(e) {
				return
			}
			idle.Reset(heartbeat)
		}
	}
}

// Health is the answer of GET /v1/health.
type Health struct {
	Status    string `json:"status"`  // "ok", or "degraded" when the last list of workers failed or spawns cannot be placed
	Version   string `json:"version"` // hlaunch's release version (internal/version), as hlaunch --version
	PID       int    `json:"pid"`
	UID       int    `json:"uid"`
	Uptime    string `json:"uptime"`
	Workers   int    `json:"workers"` // records known to the watcher
	Running   int    `json:"running"`
	LastPoll  string `json:"last_poll,omitempty"`
	PollError string `json:"poll_error,omitempty"`
	// SpawnError is what the last spawn that failed for a host-level reason (no restart-safe placement:
	// degraded, 503) said; cleared by the next spawn that starts a worker. Status is then "degraded".
	SpawnError string `json:"spawn_error,omitempty"`
	LastEvent  uint64 `json:"last_event"`     // seq of the newest event
	Warm       *int   `json:"warm,omitempty"` // with --warm: warm slots ready now
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if s.placementNote() != "" {
		s.checkPlacement(r.Context()) // until the configured placement can be made again
	}
	total, running := s.counts()
	s.mu.Lock()
	h := Health{Status: "ok", Version: version.Version, PID: os.Getpid(), UID: os.Geteuid(), Workers: total, Running: running,
		LastEvent: s.events.LastSeq()}
	if !s.lastPoll.IsZero() {
		h.LastPoll = s.lastPoll.UTC().Format(time.RFC3339Nano)
	}
	if s.pollErr != nil {
		h.Status, h.PollError = "degraded", s.pollErr.Error()
	}
	if s.spawnErr != "" {
		h.Status, h.SpawnError = "degraded", s.spawnErr
	}
	s.mu.Unlock()
	h.Uptime = s.now().Sub(s.start).Round(time.Millisecond).String()
	if s.pool != nil {
		n := s.pool.Ready()
		h.Warm = &n
	}
	writeJSON(w, http.StatusOK, h)
}

// doctorer is the optional host-check part of a backend (*launcher.Launcher has it; the test fake may not).
type doctorer interface {
	Doctor(ctx context.Context) (doctor.Report, error)
}

// handleDoctor: GET /v1/doctor; the launcher's host report (`hlaunch doctor --json`), or 501.
func (s *Server) handleDoctor(w http.ResponseWriter, r *http.Request) {
	d, ok := s.b.(doctorer)
	if !ok {
		writeError(w, fmt.Errorf("%w: this launcher has no doctor", ErrNotImplemented))
		return
	}
	rep, err := d.Doctor(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// passedStdio returns the stdin, stdout and stderr the client passed with its request (SCM_RIGHTS) for a
// spec whose stdio is "inherit"; the worker's shim gets its own copies, and ours are closed after the
// launch. Any other spec ignores passed descriptors (closed at the end of the request: endRequest).
func passedStdio(r *http.Request, spec worker.Spec) (worker.Stdio, func(), error) {
	if spec.Stdio != worker.StdioInherit {
		return worker.Stdio{}, func() {}, nil
	}
	var fds []int
	if a := connAuthFrom(r.Context()); a != nil && a.fds != nil {
		fds = a.fds.TakeFDs()
	}
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "passed")
	}
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	if len(files) != 3 {
		closeAll()
		return worker.Stdio{}, nil, fmt.Errorf("%w: stdio inherit: send exactly three descriptors (stdin, stdout, stderr) with the request as SCM_RIGHTS; got %d", worker.ErrInvalid, len(files))
	}
	return worker.Stdio{Stdin: files[0], Stdout: files[1], Stderr: files[2]}, closeAll, nil
}

// noteSpawn keeps what health reports of spawns: a failure for a host-level reason (worker.ErrDegraded:
// no systemd manager, no writable cgroup parent; worker.ErrNoSpace: no room for records) until a spawn
// starts a worker again.
func (s *Server) noteSpawn(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		s.spawnErr = ""
	case errors.Is(err, worker.ErrDegraded), errors.Is(err, worker.ErrNoSpace):
		s.spawnErr = err.Error()
	}
}
