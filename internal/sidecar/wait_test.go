package sidecar

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// /wait wakes on the watcher's polls, not on a timer per waiter: 100 waiters on one running worker read
// its record once each, and once more each after the poll that follows its exit, and nothing else reads it
// (no Serve runs here: the test's own poll is the only one).
func TestWaitWakesOnPoll(t *testing.T) {
	f := newFake()
	const id = "w-0000000000a1"
	f.add(worker.Record{Receipt: worker.Receipt{ID: id}, State: fingerprint.Running})
	s, err := newServer(Config{Socket: filepath.Join(t.TempDir(), "s"), NoActivation: true, Log: io.Discard}, f)
	if err != nil {
		t.Fatal(err)
	}
	s.alive = func(worker.Receipt) bool { return false }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const waiters = 100
	done := make(chan worker.Record, waiters)
	for range waiters {
		go func() {
			rec, err := s.waitEnd(ctx, id)
			if err != nil {
				t.Errorf("wait: %v", err)
			}
			done <- rec
		}()
	}
	// Every waiter has read the record once and parked (it took the poll channel before its read).
	for f.getCount(id) < waiters {
		select {
		case <-ctx.Done():
			t.Fatalf("waiters did not read the record: %d reads", f.getCount(id))
		case <-time.After(time.Millisecond):
		}
	}
	f.exit(id, 3, "", false)
	if err := s.poll(ctx, false); err != nil {
		t.Fatal(err)
	}
	for range waiters {
		select {
		case rec := <-done:
			if rec.ExitCode == nil || *rec.ExitCode != 3 {
				t.Fatalf("wait returned %+v, want exit 3", rec)
			}
		case <-ctx.Done():
			t.Fatal("a waiter did not wake on the poll")
		}
	}
	if n := f.getCount(id); n != 2*waiters+1 {
		t.Errorf("%d reads of the record, want %d (one per waiter before and after the poll, one by the poll)", n, 2*waiters+1)
	}
}

// GET /v1/workers pages with limit and after, naming the next page's cursor in a full page's header, and
// refuses a limit or an after that is not one, naming the parameter.
func TestListPaged(t *testing.T) {
	f := newFake()
	for _, id := range []string{"w-000000000003", "w-000000000001", "w-000000000002"} {
		f.add(worker.Record{Receipt: worker.Receipt{ID: id}, State: fingerprint.Exited})
	}
	s, err := newServer(Config{Socket: filepath.Join(t.TempDir(), "s"), NoActivation: true, Log: io.Discard}, f)
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(s.handleList)
	get := func(query string) (*httptest.ResponseRecorder, []worker.Record) {
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, httptest.NewRequest("GET", "/v1/workers"+query, nil))
		var recs []worker.Record
		_ = json.Unmarshal(rr.Body.Bytes(), &recs)
		return rr, recs
	}
	rr, recs := get("?limit=2")
	if rr.Code != 200 || len(recs) != 2 || recs[0].ID != "w-000000000001" || recs[1].ID != "w-000000000002" || rr.Header().Get(NextAfterHeader) != "w-000000000002" {
		t.Fatalf("first page: %d %v, next %q", rr.Code, recs, rr.Header().Get(NextAfterHeader))
	}
	rr, recs = get("?limit=2&after=w-000000000002")
	if rr.Code != 200 || len(recs) != 1 || recs[0].ID != "w-000000000003" || rr.Header().Get(NextAfterHeader) != "" {
		t.Fatalf("last page: %d %v, next %q", rr.Code, recs, rr.Header().Get(NextAfterHeader))
	}
	for _, q := range []string{"?limit=0", "?limit=x", "?limit=-1", "?limit=10001", "?after=../x", "?after=W-000000000001"} {
		rr, _ := get(q)
		param := strings.TrimPrefix(strings.SplitN(q, "=", 2)[0], "?")
		if rr.Code != 400 || !strings.Contains(rr.Body.String(), `"invalid"`) || !strings.Contains(rr.Body.String(), param) {
			t.Errorf("%s: %d %s; want 400 invalid naming %s", q, rr.Code, rr.Body.String(), param)
		}
	}
}
