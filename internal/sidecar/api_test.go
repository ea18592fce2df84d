package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/sidecar/events"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// testServer runs a Server with backend b on a fresh socket and stops it at cleanup.
type testServer struct {
	*Server
	path   string
	client *http.Client
	done   chan error
}

func shortTempDir(t *testing.T) string {
	t.Helper()
	// t.TempDir() paths can exceed the 108-byte sun_path limit once the test name is long.
	d, err := os.MkdirTemp("", "hls-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
}

func startTest(t *testing.T, b backend, cfg Config, opts ...func(*Server)) *testServer {
	t.Helper()
	if cfg.Socket == "" {
		cfg.Socket = filepath.Join(shortTempDir(t), "sidecar.sock")
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Millisecond
	}
	cfg.NoActivation = true
	cfg.Log = io.Discard
	s, err := newServer(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range opts {
		o(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Server: s, path: cfg.Socket, client: unixClient(cfg.Socket), done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(ctx) }()
	select {
	case <-s.ready:
	case err := <-ts.done:
		t.Fatalf("Serve: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("server not ready")
	}
	t.Cleanup(func() {
		ts.client.CloseIdleConnections()
		cancel()
		select {
		case err := <-ts.done:
			if err != nil {
				t.Errorf("Serve returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after cancel")
		}
		if _, err := os.Lstat(cfg.Socket); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket %s left behind: %v", cfg.Socket, err)
		}
	})
	return ts
}

// awaitPolls returns once the watcher has finished n more polls. The first of them may have begun before
// the call; every later one began after it, so n >= 2 proves that n-1 whole polls saw what the caller set up
// before the call. It fails the test when the watcher stops polling.
func (ts *testServer) awaitPolls(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for i := range n {
		select {
		case <-ts.nextPoll():
		case <-deadline:
			t.Fatalf("the watcher finished %d of %d polls within 30s", i, n)
		}
	}
}

// do sends a request and decodes the JSON answer into out (when non-nil); it returns the status and, for
// errors, the stable code.
func (ts *testServer) do(t *testing.T, method, path, body string, out any) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://sidecar"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: content type %q, body %s", method, path, ct, raw)
	}
	if resp.StatusCode >= 400 {
		var eb errorBody
		if err := json.Unmarshal(raw, &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
			t.Fatalf("%s %s: %d with a body that is not a JSON error: %s", method, path, resp.StatusCode, raw)
		}
		return resp.StatusCode, eb.Error.Code
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, ""
}

// eventStream reads /v1/events lines.
type eventStream struct {
	sc   *bufio.Scanner
	body io.Closer
}

func (ts *testServer) events(t *testing.T, query string) *eventStream {
	t.Helper()
	resp, err := ts.client.Get("http://sidecar/v1/events" + query)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &eventStream{sc: bufio.NewScanner(resp.Body), body: resp.Body}
}

// next returns the next event of one of the wanted types (any type when none is named).
func (es *eventStream) next(t *testing.T, types ...string) events.Event {
	t.Helper()
	type res struct {
		e   events.Event
		err error
	}
	ch := make(chan res, 1)
	go func() {
		for es.sc.Scan() {
			var e events.Event
			if err := json.Unmarshal(es.sc.Bytes(), &e); err != nil {
				ch <- res{err: fmt.Errorf("bad event line %q: %w", es.sc.Text(), err)}
				return
			}
			if len(types) == 0 || slices.Contains(types, e.Type) {
				ch <- res{e: e}
				return
			}
		}
		ch <- res{err: fmt.Errorf("stream ended: %v", es.sc.Err())}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.e
	case <-time.After(5 * time.Second):
		es.body.Close()
		t.Fatalf("no %v event within 5s", types)
	}
	return events.Event{}
}

func TestAPI(t *testing.T) {
	f := newFake()
	ts := startTest(t, f, Config{MaxBody: 2048})
	es := ts.events(t, "?since=0")

	var rc worker.Receipt
	st, code := ts.do(t, "POST", "/v1/workers", `{"profile":"alpha","argv":["sleep","9"],"limits":{"pids":5}}`, &rc)
	if st != 201 || rc.ID == "" || rc.Profile != "alpha" {
		t.Fatalf("spawn: %d %s %+v", st, code, rc)
	}
	if spec := f.spec(); !spec.Detach || spec.Limits.Pids != 5 {
		t.Fatalf("spec reached the launcher as %+v; want detached with its limits", spec)
	}
	if e := es.next(t); e.Type != events.Started || e.ID != rc.ID || e.PID != rc.PID || e.Seq == 0 {
		t.Fatalf("first event %+v, want started for %s", e, rc.ID)
	}

	// Requests that must start nothing, each answered with a JSON error.
	bad := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"unknown field", "POST", "/v1/workers", `{"profile":"alpha","argv":["true"],"detatch":true}`, 400, "invalid"},
		{"seccomp off by default", "POST", "/v1/workers", `{"profile":"alpha","argv":["true"],"sandbox":true,"seccomp":"off"}`, 400, "invalid"},
		{"malformed", "POST", "/v1/workers", `{"profile":"alpha",`, 400, "invalid"},
		{"two documents", "POST", "/v1/workers", `{"profile":"a","argv":["x"]}{}`, 400, "invalid"},
		{"empty body", "POST", "/v1/workers", ``, 400, "invalid"},
		{"invalid spec", "POST", "/v1/workers", `{"profile":"","argv":["true"]}`, 400, "invalid"},
		{"oversized", "POST", "/v1/workers", `{"profile":"alpha","argv":["` + strings.Repeat("x", 4096) + `"]}`, 413, "too_large"},
		{"no such worker", "GET", "/v1/workers/w-000000000000", ``, 404, "not_found"},
		{"no such route", "GET", "/v1/nothing", ``, 404, "not_found"},
		{"wrong method", "DELETE", "/v1/workers", ``, 405, "method_not_allowed"},
		{"wrong method on item", "PUT", "/v1/workers/" + rc.ID + "/stop", ``, 405, "method_not_allowed"},
		{"bad signal", "POST", "/v1/workers/" + rc.ID + "/signal", `{"signal":"NOPE"}`, 400, "invalid"},
		{"signal unknown field", "POST", "/v1/workers/" + rc.ID + "/signal", `{"sig":"TERM"}`, 400, "invalid"},
		{"bad grace", "POST", "/v1/workers/" + rc.ID + "/stop", `{"grace":"-1s"}`, 400, "invalid"},
		{"bad wait timeout", "GET", "/v1/workers/" + rc.ID + "/wait?timeout=x", ``, 400, "invalid"},
		{"bad since", "GET", "/v1/events?since=-1", ``, 400, "invalid"},
		{"doctor without one", "GET", "/v1/doctor", ``, 501, "not_implemented"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			st, code := ts.do(t, b.method, b.path, b.body, nil)
			if st != b.status || code != b.code {
				t.Fatalf("got %d %q, want %d %q", st, code, b.status, b.code)
			}
		})
	}
	if f.n != 1 {
		t.Fatalf("%d workers started; the bad requests must start nothing", f.n)
	}

	var list []worker.Record
	if st, _ := ts.do(t, "GET", "/v1/workers", "", &list); st != 200 || len(list) != 1 || list[0].ID != rc.ID {
		t.Fatalf("list: %d %+v", st, list)
	}
	if st, _ := ts.do(t, "GET", "/v1/workers?state=exited", "", &list); st != 200 || len(list) != 0 {
		t.Fatalf("list ?state=exited: %d %+v", st, list)
	}
	var rec worker.Record
	if st, _ := ts.do(t, "GET", "/v1/workers/"+rc.ID, "", &rec); st != 200 || rec.State != "running" {
		t.Fatalf("get: %d %+v", st, rec)
	}
	var sr signalResponse
	if st, _ := ts.do(t, "POST", "/v1/workers/"+rc.ID+"/signal", `{"signal":"usr1","all":true}`, &sr); st != 200 || sr.Signal != "SIGUSR1" || !sr.All {
		t.Fatalf("signal: %d %+v", st, sr)
	}
	// A signal without a name is answered in the one form records and the CLI use (docs/sidecar.md).
	if st, _ := ts.do(t, "POST", "/v1/workers/"+rc.ID+"/signal", `{"signal":"34"}`, &sr); st != 200 || sr.Signal != "SIG34" {
		t.Fatalf("signal 34: %d %+v, want SIG34", st, sr)
	}
	if st, _ := ts.do(t, "POST", "/v1/workers/"+rc.ID+"/signal", ``, &sr); st != 200 || sr.Signal != "SIGTERM" {
		t.Fatalf("signal with empty body: %d %+v", st, sr)
	}
	if st, code := ts.do(t, "GET", "/v1/workers/"+rc.ID+"/wait?timeout=30ms", "", nil); st != 408 || code != "timeout" {
		t.Fatalf("wait on a running worker: %d %q, want 408 timeout", st, code)
	}

	f.exit(rc.ID, 3, "", false)
	if e := es.next(t); e.Type != events.Exited || e.ID != rc.ID || e.ExitCode == nil || *e.ExitCode != 3 || e.Initial {
		t.Fatalf("event after exit %+v, want exited with code 3", e)
	}
	if st, _ := ts.do(t, "GET", "/v1/workers/"+rc.ID+"/wait", "", &rec); st != 200 || rec.ExitCode == nil || *rec.ExitCode != 3 {
		t.Fatalf("wait: %d %+v", st, rec)
	}
	if st, code := ts.do(t, "POST", "/v1/workers/"+rc.ID+"/signal", `{}`, nil); st != 409 || code != "not_running" {
		t.Fatalf("signal an exited worker: %d %q", st, code)
	}

	// An OOM kill: oom then exited.
	var rc2 worker.Receipt
	ts.do(t, "POST", "/v1/workers", `{"profile":"beta","argv":["x"]}`, &rc2)
	es.next(t, events.Started)
	f.exit(rc2.ID, 0, "SIGKILL", true)
	if e := es.next(t); e.Type != events.OOM || e.ID != rc2.ID {
		t.Fatalf("want oom, got %+v", e)
	}
	if e := es.next(t); e.Type != events.Exited || e.Signal != "SIGKILL" || !e.OOMKilled {
		t.Fatalf("want exited by SIGKILL, got %+v", e)
	}

	// Stop answers the final record.
	var rc3 worker.Receipt
	ts.do(t, "POST", "/v1/workers", `{"profile":"gamma","argv":["x"]}`, &rc3)
	if st, _ := ts.do(t, "POST", "/v1/workers/"+rc3.ID+"/stop", `{"grace":"10ms"}`, &rec); st != 200 || rec.State != "exited" {
		t.Fatalf("stop: %d %+v", st, rec)
	}

	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{worker.ErrKeyHeld, 409, "key_held"},
		{worker.ErrDegraded, 503, "degraded"},
		{worker.ErrCommandNotFound, 422, "command_not_found"},
	} {
		f.mu.Lock()
		f.startErr = fmt.Errorf("launch: %w", tc.err)
		f.mu.Unlock()
		if st, code := ts.do(t, "POST", "/v1/workers", `{"profile":"a","argv":["x"]}`, nil); st != tc.status || code != tc.code {
			t.Errorf("start error %v: %d %q, want %d %q", tc.err, st, code, tc.status, tc.code)
		}
	}

	// The degraded spawn is what health reports until a spawn starts a worker again.
	var h Health
	if ts.do(t, "GET", "/v1/health", "", &h); h.Status != "degraded" || !strings.Contains(h.SpawnError, "no restart-safe placement") {
		t.Fatalf("health after a degraded spawn: %+v", h)
	}
	f.mu.Lock()
	f.startErr = nil
	f.mu.Unlock()
	var rc4 worker.Receipt
	ts.do(t, "POST", "/v1/workers", `{"profile":"gamma","argv":["x"]}`, &rc4)
	ts.do(t, "POST", "/v1/workers/"+rc4.ID+"/stop", `{"grace":"10ms"}`, &rec)
	// The watcher notices the stop within a poll or two; the bound is a deadline for a watcher that never
	// does, not a count of polls, which a slow host would use up and fall through silently to the check
	// below.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ts.do(t, "GET", "/v1/health", "", &h); h.Running == 0 {
			break
		}
	}
	if st, _ := ts.do(t, "GET", "/v1/health", "", &h); st != 200 || h.Status != "ok" || h.Workers != 4 || h.Running != 0 || h.PID != os.Getpid() {
		t.Fatalf("health: %d %+v", st, h)
	}
	f.mu.Lock()
	f.listErr = errors.New("state dir unreadable")
	f.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for h.Status != "degraded" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		ts.do(t, "GET", "/v1/health", "", &h)
	}
	if h.Status != "degraded" || h.PollError == "" {
		t.Fatalf("health with a failing list: %+v", h)
	}
}

// TestRestartReconcile: records left by an earlier sidecar become adopted, exited (with the code the shim
// recorded) or refused, each reported once with initial set, before the first request is answered.
func TestRestartReconcile(t *testing.T) {
	f := newFake()
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-00000000000a", PID: 11}, State: "running"})
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-00000000000b"}, State: "exited", ExitCode: intp(7)})
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-00000000000c"}, State: "foreign-boot", Reason: "boot id differs"})
	ts := startTest(t, f, Config{})
	es := ts.events(t, "?since=0")
	want := map[string]string{"w-00000000000a": events.Adopted, "w-00000000000b": events.Exited, "w-00000000000c": events.Refused}
	for range want {
		e := es.next(t)
		if want[e.ID] != e.Type || !e.Initial {
			t.Fatalf("event %+v, want %s with initial", e, want[e.ID])
		}
		if e.Type == events.Exited && (e.ExitCode == nil || *e.ExitCode != 7) {
			t.Fatalf("exited event lost the code: %+v", e)
		}
		if e.Type == events.Refused && e.Reason != "foreign-boot: boot id differs" {
			t.Fatalf("refused reason %q", e.Reason)
		}
	}
	f.exit("w-00000000000a", 0, "", false)
	if e := es.next(t); e.Type != events.Exited || e.ID != "w-00000000000a" || e.Initial {
		t.Fatalf("want a live exited event, got %+v", e)
	}
	// A reconnect with a seq from an earlier sidecar process says that it lost events.
	if e := ts.events(t, "?since=999999").next(t); e.Type != events.Lost {
		t.Fatalf("since from an earlier process: first event %+v, want lost", e)
	}
}

// TestSpawnNeverAdopted: with the watcher polling as fast as it can, a worker this sidecar starts is reported
// as started exactly once and never as adopted.
func TestSpawnNeverAdopted(t *testing.T) {
	for _, delay := range []time.Duration{0, 3 * time.Millisecond} {
		t.Run(fmt.Sprint("list delay ", delay), func(t *testing.T) { testSpawnNeverAdopted(t, delay) })
	}
}

func testSpawnNeverAdopted(t *testing.T, listDelay time.Duration) {
	f := newFake()
	f.listDelay = listDelay // stale lists: a spawn finishes while the list that missed it is in flight
	ts := startTest(t, f, Config{PollInterval: time.Microsecond})
	es := ts.events(t, "")
	const n = 60
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st, code := ts.do(t, "POST", "/v1/workers", fmt.Sprintf(`{"profile":"p%d","argv":["x"]}`, i), nil); st != 201 {
				t.Errorf("spawn %d: %d %s", i, st, code)
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for range n {
		e := es.next(t)
		if e.Type != events.Started || seen[e.ID] {
			t.Fatalf("event %+v: want one started per spawn and nothing else", e)
		}
		seen[e.ID] = true
	}
	// Nor later: polls that list every record again add no event.
	ts.awaitPolls(t, 4)
	var h Health
	if ts.do(t, "GET", "/v1/health", "", &h); h.LastEvent != n {
		t.Fatalf("%d events after %d spawns and three whole polls, want %d", h.LastEvent, n, n)
	}
}

// TestExitWaitsForStatus: an exit is announced once, with its code, after the shim has written it - not
// as soon as the leader is gone - unless the shim itself is gone.
func TestExitWaitsForStatus(t *testing.T) {
	f := newFake()
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-00000000000a", ShimPID: 4242}, State: "running"})
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-00000000000b", ShimPID: 4343}, State: "running"})
	var mu sync.Mutex
	shims := map[int]bool{4242: true, 4343: true}
	ts := startTest(t, f, Config{}, func(s *Server) {
		s.alive = func(r worker.Receipt) bool { mu.Lock(); defer mu.Unlock(); return shims[r.ShimPID] }
	})
	es := ts.events(t, "?since=2")
	setState := func(id string, mut func(*worker.Record)) {
		f.mu.Lock()
		r := f.recs[id]
		mut(&r)
		f.recs[id] = r
		f.mu.Unlock()
	}
	setState("w-00000000000a", func(r *worker.Record) { r.State = "exited" }) // leader gone, no status yet
	ts.awaitPolls(t, 4)                                                       // three whole polls saw it without a status
	setState("w-00000000000a", func(r *worker.Record) { r.ExitCode = intp(9) })
	if e := es.next(t); e.Type != events.Exited || e.ID != "w-00000000000a" || e.ExitCode == nil || *e.ExitCode != 9 {
		t.Fatalf("first event %+v, want exited w-...a with code 9", e)
	}
	// A shim that died without writing: the exit is reported without a code rather than never.
	setState("w-00000000000b", func(r *worker.Record) { r.State = "exited" })
	mu.Lock()
	shims[4343] = false
	mu.Unlock()
	if e := es.next(t); e.Type != events.Exited || e.ID != "w-00000000000b" || e.ExitCode != nil {
		t.Fatalf("event %+v, want exited w-...b without a code", e)
	}
}

// TestAdoptionWaitsForSpawnsInFlight: while a spawn whose record is already written has not answered, neither
// its worker nor a worker started elsewhere at the same time is reported as adopted; once it answers, the
// spawn's worker is started (once) and the other one adopted.
func TestAdoptionWaitsForSpawnsInFlight(t *testing.T) {
	f := newFake()
	gate := make(chan struct{})
	f.startGate = gate
	ts := startTest(t, f, Config{PollInterval: time.Millisecond})
	es := ts.events(t, "")
	done := make(chan int, 1)
	go func() {
		st, _ := ts.do(t, "POST", "/v1/workers", `{"profile":"a","argv":["x"]}`, nil)
		done <- st
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) { // until the spawn has written its record
		f.mu.Lock()
		n := f.n
		f.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the spawn did not write its record within 30s")
		}
	}
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-0000000000ee", PID: 99}, State: "running"})
	ts.awaitPolls(t, 6) // five whole polls listed both records while the spawn was in flight
	var h Health
	ts.do(t, "GET", "/v1/health", "", &h)
	if h.LastEvent != 0 {
		t.Fatalf("%d events while the spawn was in flight, want none", h.LastEvent)
	}
	close(gate)
	if st := <-done; st != 201 {
		t.Fatalf("spawn: %d", st)
	}
	got := map[string]string{}
	for range 2 {
		e := es.next(t)
		got[e.ID] = e.Type
	}
	if got["w-000000000001"] != events.Started || got["w-0000000000ee"] != events.Adopted {
		t.Fatalf("events %v, want started for the spawn and adopted for the other", got)
	}
}

// TestPollSkipsFinalRecords: a record reported in a state nothing can change (exited with its status, a
// foreign boot) is not read again by later polls; running workers are read at every poll; a final record
// that is removed is forgotten.
func TestPollSkipsFinalRecords(t *testing.T) {
	f := newFake()
	code := 0
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-00000000000a"}, State: "running"})
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-00000000000b"}, State: "exited", ExitCode: &code})
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-00000000000c"}, State: "foreign-boot"})
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-00000000000d", ShimPID: 4242}, State: "exited"}) // status not in yet
	f.add(worker.Record{Receipt: worker.Receipt{ID: "w-00000000000e"}, State: "running"})               // read by every poll to the end
	ts := startTest(t, f, Config{PollInterval: time.Millisecond}, func(s *Server) {
		s.alive = func(r worker.Receipt) bool { return r.ShimPID == 4242 }
	})
	es := ts.events(t, "")
	f.getsSince()
	ts.awaitPolls(t, 4) // three whole polls since the count was reset
	g := f.getsSince()
	if g["w-00000000000a"] < 3 || g["w-00000000000d"] < 3 {
		t.Fatalf("running and unsettled records were not re-read at every poll: %v", g)
	}
	if g["w-00000000000b"] != 0 || g["w-00000000000c"] != 0 {
		t.Fatalf("final records were read again: %v", g)
	}
	// The running one exits: reported once, then no longer read.
	f.mu.Lock()
	r := f.recs["w-00000000000a"]
	r.State, r.ExitCode = "exited", &code
	f.recs["w-00000000000a"] = r
	f.mu.Unlock()
	for {
		e := es.next(t)
		if e.ID == "w-00000000000a" && e.Type == events.Exited && !e.Initial {
			break
		}
		if e.ID == "w-00000000000a" && !e.Initial {
			t.Fatalf("event %+v, want exited w-00000000000a", e)
		}
	}
	// The poll that published the exit marked the record final; every poll after it skips the record,
	// while the running one is still read by each of them.
	f.getsSince()
	ts.awaitPolls(t, 4)
	if g := f.getsSince(); g["w-00000000000a"] != 0 || g["w-00000000000e"] < 3 {
		t.Fatalf("after three whole polls: an exited record reported with its status is still read, or the running one is not: %v", g)
	}
	f.remove("w-00000000000b")
	deadline := time.Now().Add(5 * time.Second)
	for {
		ts.mu.Lock()
		_, held := ts.final["w-00000000000b"]
		_, viewed := ts.view["w-00000000000b"]
		ts.mu.Unlock()
		if !held && !viewed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a removed final record is still remembered")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A sidecar started with --allow-seccomp-off passes the opt-out to the launcher; without it the same body
// is refused before anything starts (TestAPI's "seccomp off by default").
func TestSeccompOffAllowedByConfig(t *testing.T) {
	f := newFake()
	ts := startTest(t, f, Config{AllowSeccompOff: true})
	st, code := ts.do(t, "POST", "/v1/workers", `{"profile":"alpha","argv":["true"],"sandbox":true,"seccomp":"off"}`, nil)
	if spec := f.spec(); st != 201 || spec.Seccomp != worker.SeccompOff {
		t.Fatalf("spawn with --allow-seccomp-off: %d %s, spec %+v", st, code, spec)
	}
}
