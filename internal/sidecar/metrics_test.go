package sidecar

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/hlaunch/hlaunch/internal/sidecar/events"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// syncBuffer is a log destination the test reads while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// metrics fetches /v1/metrics and returns its text.
func (ts *testServer) metrics(t *testing.T) string {
	t.Helper()
	resp, err := ts.client.Get("http://sidecar/v1/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return string(b)
}

// sample is the value of one sample line ("name{labels} value"), or "" when absent.
func sample(text, series string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// /v1/metrics counts spawns by mode, spawn errors by code, events by type, and the running workers; the
// log has one line for each spawn, refusal and exit.
func TestMetricsAndLog(t *testing.T) {
	f := newFake()
	logs := &syncBuffer{}
	ts := startTest(t, f, Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	es := ts.events(t, "?since=0")

	before := ts.metrics(t)
	for series, want := range map[string]string{
		`hlaunch_sidecar_spawns_total{mode="cgroup"}`:           "0",
		`hlaunch_sidecar_events_total{type="exited"}`:           "0",
		`hlaunch_sidecar_workers_running`:                       "0",
		`hlaunch_sidecar_spawn_duration_seconds_count`:          "0",
		`hlaunch_sidecar_build_info{version="` + "0.5.0" + `"}`: "1",
	} {
		if got := sample(before, series); got != want {
			t.Errorf("before any spawn: %s = %q, want %q", series, got, want)
		}
	}

	var rc worker.Receipt
	for i := 0; i < 2; i++ {
		if st, code := ts.do(t, "POST", "/v1/workers", `{"profile":"alpha","argv":["sleep","9"]}`, &rc); st != 201 {
			t.Fatalf("spawn: %d %s", st, code)
		}
		es.next(t, events.Started)
	}
	if st, _ := ts.do(t, "POST", "/v1/workers", `{"profile":"alpha","argv":[]}`, nil); st != 400 {
		t.Fatalf("bad spawn: %d", st)
	}
	f.mu.Lock()
	f.startErr = fmt.Errorf("%w: no systemd manager answered", worker.ErrDegraded)
	f.mu.Unlock()
	if st, _ := ts.do(t, "POST", "/v1/workers", `{"profile":"alpha","argv":["true"]}`, nil); st != 503 {
		t.Fatalf("degraded spawn: %d", st)
	}
	f.mu.Lock()
	f.startErr = nil
	f.mu.Unlock()
	f.exit(rc.ID, 3, "", false)
	es.next(t, events.Exited)

	after := ts.metrics(t)
	for series, want := range map[string]string{
		`hlaunch_sidecar_spawns_total{mode="cgroup"}`:              "2",
		`hlaunch_sidecar_spawn_errors_total{code="invalid"}`:       "1",
		`hlaunch_sidecar_spawn_errors_total{code="degraded"}`:      "1",
		`hlaunch_sidecar_spawn_duration_seconds_count`:             "2",
		`hlaunch_sidecar_events_total{type="started"}`:             "2",
		`hlaunch_sidecar_events_total{type="exited"}`:              "1",
		`hlaunch_sidecar_workers_running`:                          "1",
		`hlaunch_sidecar_spawn_duration_seconds_bucket{le="+Inf"}`: "2",
	} {
		if got := sample(after, series); got != want {
			t.Errorf("%s = %q, want %q", series, got, want)
		}
	}
	log := logs.String()
	for _, want := range []string{
		`msg=spawn id=` + rc.ID, `profile=alpha mode=cgroup`,
		`msg="spawn refused" code=invalid`, `msg="spawn refused" code=degraded`,
		`msg=exited id=` + rc.ID, `exit_code=3`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if !strings.HasPrefix(line, "time=") || !strings.Contains(line, " level=") {
			t.Errorf("not a structured log line: %q", line)
		}
	}
}
