package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/schematest"
)

// damagedRecords are what a torn write, a downgrade and a damaged state directory leave in the worker
// directory: id -> the state each is listed in. w-00000000d003 decodes and names key "kf".
var damagedRecords = map[string]string{
	"w-00000000d001": "corrupt",         // torn
	"w-00000000d002": "unknown-version", // a newer hlaunch's token, and no id
	"w-00000000d003": "unknown-version", // a newer hlaunch's record that names a key
	"w-00000000d004": "corrupt",         // a directory in its place
	"w-00000000d005": "corrupt",         // a symbolic link in its place
	"w-00000000d006": "corrupt",         // a token that does not decode
}

// plantDamaged writes damagedRecords into dir, and a half-written temp file of a writer that died two
// minutes ago.
func plantDamaged(t *testing.T, dir string) {
	t.Helper()
	write := func(id, b string) { must(t, os.WriteFile(filepath.Join(dir, id+".json"), []byte(b), 0o600)) }
	write("w-00000000d001", `{"id":"w-00000000d001","tok`)
	write("w-00000000d002", `{"token":"hl2.future"}`)
	write("w-00000000d003", `{"id":"w-00000000d003","token":"hl2.future","key":"kf"}`)
	must(t, os.Mkdir(filepath.Join(dir, "w-00000000d004.json"), 0o700))
	must(t, os.Symlink("/etc/hostname", filepath.Join(dir, "w-00000000d005.json")))
	write("w-00000000d006", `{"id":"w-00000000d006","token":"hl1.AAAAAAAAAAAA","key":"k6"}`)
	tmp := filepath.Join(dir, ".w-00000000d007.tmp-4242")
	must(t, os.WriteFile(tmp, []byte(`{"id":"w-00000000d007","to`), 0o600))
	old := time.Now().Add(-2 * time.Minute)
	must(t, os.Chtimes(tmp, old, old))
}

// checkDamagedListed checks that recs hold every damaged record in its state, as the schema's
// damaged_record, and the workers of want in theirs.
func checkDamagedListed(t *testing.T, where string, recs []map[string]any, want map[string]string) {
	t.Helper()
	schema := scLoadSchema(t, "receipt.schema.json")
	got := map[string]string{}
	for _, r := range recs {
		id, _ := r["id"].(string)
		st, _ := r["state"].(string)
		got[id] = st
		if _, damaged := damagedRecords[id]; damaged {
			if errs := schematest.Validate(schema, map[string]any{"$ref": "#/$defs/damaged_record"}, r, id); len(errs) > 0 {
				t.Errorf("%s: %v", where, errs)
			}
		}
	}
	for id, st := range damagedRecords {
		if got[id] != st {
			t.Errorf("%s: %s is %q, want %q", where, id, got[id], st)
		}
	}
	for id, st := range want {
		if got[id] != st {
			t.Errorf("%s: %s is %q, want %q", where, id, got[id], st)
		}
	}
}

// A state directory holding damaged, future-version and half-written records serves every other worker
// through the CLI (ps, status, stop, wait, a --key launch) and a live sidecar (its list, health, events, a
// keyed spawn, stop): each damaged record is listed in its own state, refused, holds a key only when it
// names it, and `hlaunch gc` quarantines it, except the one that names a key.
func TestDamagedRecordsServeTheRest(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	place := []string{"--scope", "cgroup", "--cgroup-parent", e.Parent} // the test's own parent, not the default
	held := e.detach(append([]string{"--key", "ka"}, place...), "sleep", "300")
	other := e.detach(place, "sleep", "300")
	workers := filepath.Join(e.State, "workers")
	plantDamaged(t, workers)

	// The CLI.
	r := e.run("ps", "--json")
	var recs []map[string]any
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &recs) != nil {
		t.Fatalf("ps --json: exit %d: %s %s", r.Code, r.Stdout, r.Stderr)
	}
	checkDamagedListed(t, "ps", recs, map[string]string{held.ID: "running", other.ID: "running"})
	if r := e.run("ps"); r.Code != 0 || !strings.Contains(r.Stdout, "w-00000000d001") {
		t.Errorf("ps: exit %d: %s %s", r.Code, r.Stdout, r.Stderr)
	}
	for id, st := range damagedRecords {
		rc, r := e.record(id)
		if r.Code != 3 || rc.State != st {
			t.Errorf("status %s: exit %d, state %q; want 3 and %q: %s", id, r.Code, rc.State, st, r.Stderr)
		}
	}
	if rc, r := e.record(held.ID); r.Code != 0 || rc.State != "running" {
		t.Errorf("status of the keyed worker: exit %d, %q", r.Code, rc.State)
	}
	for _, verb := range [][]string{{"stop"}, {"wait"}, {"signal", "-s", "TERM"}} {
		if r := e.run(append(verb, "w-00000000d001")...); r.Code != 3 {
			t.Errorf("%s of a corrupt record: exit %d, want 3 (refused): %s", verb[0], r.Code, r.Stderr)
		}
	}
	for key, want := range map[string]int{"ka": 73, "kf": 73, "k6": 73, "kc": 0} {
		r := e.run(append(append([]string{"exec", "-p", "b", "--detach", "--key", key}, place...), "--", "true")...)
		if r.Code != want {
			t.Errorf("exec --key %s: exit %d, want %d: %s", key, r.Code, want, r.Stderr)
		}
	}
	if r := e.run("stop", other.ID); r.Code != 0 {
		t.Errorf("stop: exit %d: %s", r.Code, r.Stderr)
	}
	if r := e.run("wait", other.ID); r.Code != 0 {
		t.Errorf("wait: exit %d: %s", r.Code, r.Stderr)
	}

	// A live sidecar (its own collection out of the way: gc below is the CLI's).
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--gc-interval", "1h")
	var health struct {
		Status    string `json:"status"`
		PollError string `json:"poll_error"`
	}
	p.mustDo("GET", "/v1/health", "", 200, &health)
	if health.Status != "ok" {
		t.Errorf("health: %+v, want ok", health)
	}
	p.mustDo("GET", "/v1/workers", "", 200, &recs)
	checkDamagedListed(t, "GET /v1/workers", recs, map[string]string{held.ID: "running", other.ID: "exited"})
	var one map[string]any
	p.mustDo("GET", "/v1/workers/w-00000000d002", "", 200, &one)
	if one["state"] != "unknown-version" || one["record_error"] == nil {
		t.Errorf("GET /v1/workers/w-00000000d002: %v", one)
	}
	if st, b := p.do("POST", "/v1/workers/w-00000000d001/stop", ""); st != 409 || scErrCode(b) != "refused" {
		t.Errorf("stop of a corrupt record: %d %s, want 409 refused", st, b)
	}
	if st, b := p.do("POST", "/v1/workers", `{"profile":"b","argv":["sleep","300"],"key":"ka"}`); st != 409 || scErrCode(b) != "key_held" {
		t.Errorf("spawn with a held key: %d %s, want 409 key_held", st, b)
	}
	var spawned receipt
	p.mustDo("POST", "/v1/workers", `{"profile":"b","argv":["sleep","300"],"key":"ks"}`, 201, &spawned)
	p.mustDo("POST", "/v1/workers/"+spawned.ID+"/stop", "", 200, nil)
	corrupt := damagedEvents(t, p, spawned.ID, 30*time.Second)
	for id, st := range damagedRecords {
		if n := corrupt[id]; len(n) != 1 || !strings.HasPrefix(n[0], st+": ") {
			t.Errorf("events for %s: %q, want one corrupt event with reason %q...", id, n, st+": ")
		}
	}

	// gc quarantines what it cannot read, but the record that names a key.
	r = e.run("gc", "--json", "--keep", "100", "--cgroup-parent", e.Parent)
	var rep struct {
		Quarantined  []string `json:"quarantined"`
		TempsRemoved int      `json:"temps_removed"`
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &rep) != nil {
		t.Fatalf("gc: exit %d: %s %s", r.Code, r.Stdout, r.Stderr)
	}
	want := []string{"w-00000000d001", "w-00000000d002", "w-00000000d004", "w-00000000d005"}
	if !slices.Equal(rep.Quarantined, want) || rep.TempsRemoved != 1 {
		t.Errorf("gc: %s, want quarantined %v and 1 temp file removed", r.Stdout, want)
	}
	ents, err := os.ReadDir(filepath.Join(e.State, "quarantine"))
	must(t, err)
	if len(ents) != len(want) {
		t.Errorf("quarantine holds %d entries, want %d", len(ents), len(want))
	}
	for _, id := range want {
		if _, err := os.Lstat(filepath.Join(workers, id+".json")); !os.IsNotExist(err) {
			t.Errorf("%s still in the worker directory: %v", id, err)
		}
	}
	r = e.run("ps", "--json")
	if r.Code != 0 || !strings.Contains(r.Stdout, held.ID) || !strings.Contains(r.Stdout, "w-00000000d003") ||
		strings.Contains(r.Stdout, "w-00000000d001") {
		t.Errorf("ps after gc: exit %d: %s %s", r.Code, r.Stdout, r.Stderr)
	}
	// The sidecar's own collection quarantines too.
	p.stop()
	must(t, os.WriteFile(filepath.Join(workers, "w-00000000d008.json"), []byte(`{"id":`), 0o600))
	startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s2.sock"), "--gc-interval", "50ms", "--keep", "100")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Lstat(filepath.Join(workers, "w-00000000d008.json")); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sidecar's collection did not quarantine w-00000000d008 within 20s")
		}
	}
	if n := countFiles(t, filepath.Join(e.State, "quarantine"), "", "-w-00000000d008.json"); n != 1 {
		t.Errorf("quarantine holds %d copies of w-00000000d008, want 1", n)
	}
}

// damagedEvents reads the sidecar's events from the start until it has seen a corrupt event for every
// damaged record and the exited event of worker last (stopped after they were planted: the polls up to its
// end read the damaged records again, and would have reported them again), and returns the corrupt
// events' reasons by id.
func damagedEvents(t *testing.T, p *scProc, last string, timeout time.Duration) map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://sidecar/v1/events?since=0", nil)
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string][]string{}
	ended := false
	sc := bufio.NewScanner(resp.Body)
	for (!ended || len(out) < len(damagedRecords)) && sc.Scan() {
		var e scEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("event line %q: %v", sc.Text(), err)
		}
		switch {
		case e.Type == "corrupt":
			out[e.ID] = append(out[e.ID], e.Reason)
		case e.Type == "exited" && e.ID == last:
			ended = true
		}
	}
	if !ended || len(out) < len(damagedRecords) {
		t.Fatalf("within %s: corrupt events %v, exited event of %s %v", timeout, out, last, ended)
	}
	return out
}
