package integration

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 24, class 8: a socket-group peer cannot run workers without a bound. Each worker holds up to the
// default task and memory limits, so a peer that spawns without end takes the host's PIDs and memory
// from every profile. A real sidecar with small bounds by flag (4 running workers, 2 per uid, so the last
// 2 are kept for root and the sidecar's uid): a throw-away socket-group user gets 2 workers and then 429
// too_many; a second such user gets 503 busy (the socket group holds all but the reserve); root (the
// gateway) still gets its 2. A stopped worker's slot comes free once the sidecar sees it end, and a new
// sidecar on the same state directory counts the workers it adopts, each against the share of the uid
// that spawned it: root's 2 hold root's share (429 too_many). On the old code every spawn was served.
func TestSidecarWorkerLimits(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	userA, agid := throwawayUser(t)
	userB, _ := throwawayUser(t)
	p := startGroupSidecar(t, e, agid, scStart{}, "--max-workers", "4", "--max-workers-per-uid", "2")
	a := startFlooder(t, p.sock, userA, agid)
	b := startFlooder(t, p.sock, userB, agid)

	ra := a.do("spawn 3")
	if ra.Statuses["201"] != 2 || ra.Statuses["429 too_many"] != 1 || ra.Retry != "1" {
		t.Fatalf("the first user's 3 spawns with --max-workers-per-uid 2: %v, Retry-After %q; want 2 started, then 429 too_many with Retry-After 1", ra.Statuses, ra.Retry)
	}
	if rb := b.do("spawn 1"); rb.Statuses["503 busy"] != 1 {
		t.Fatalf("the second user's spawn while the socket group holds all but the reserve: %v, want 503 busy", rb.Statuses)
	}
	spawn := func(who string, want int) string {
		t.Helper()
		st, body := p.do("POST", "/v1/workers", scSpec("a", "/bin/sleep", "300"))
		if st != want {
			t.Fatalf("%s: spawn answered %d %s, want %d", who, st, body, want)
		}
		var rc receipt
		if st == 201 {
			must(t, json.Unmarshal(body, &rc))
		} else if code := scErrCode(body); (want == 429 && code != "too_many") || (want == 503 && code != "busy") {
			t.Fatalf("%s: spawn answered %d with code %q", who, st, code)
		}
		return rc.ID
	}
	root1 := spawn("root's first spawn from the reserve", 201)
	spawn("root's second spawn from the reserve", 201)
	spawn("root's third spawn, over its own share", 429)

	// One of the first user's workers ends: its slot comes free when the sidecar's watcher sees the end,
	// which gives the slot back before it publishes the worker's exited event. Then one spawn of the
	// user's must be served.
	p.mustDo("POST", "/v1/workers/"+ra.IDs[0]+"/stop", `{"grace":"1s"}`, 200, nil)
	p.waitEvent("exited", ra.IDs[0], 30*time.Second)
	if r := a.do("spawn 1"); r.Statuses["201"] != 1 {
		t.Fatalf("the first user's spawn after the sidecar published the exit of one of its workers: %v, want 201 (its slot given back)", r.Statuses)
	}
	if !strings.Contains(p.log.String(), `msg="limit reached" limit=workers_per_uid uid=`+strconv.Itoa(userA)) {
		t.Errorf("the sidecar's log does not name uid %d's refusal at workers_per_uid:\n%s", userA, p.log.String())
	}

	// A new sidecar adopts the 4 running workers, each into the share of the uid that spawned it: root
	// holds its 2 again (429 too_many), and they fill --max-workers.
	p2 := p.restart()
	if st, body := p2.do("POST", "/v1/workers", scSpec("a", "/bin/sleep", "300")); st != 429 || scErrCode(body) != "too_many" {
		t.Fatalf("root's spawn to a restarted sidecar that adopted 4 running workers, 2 of them root's: %d %s, want 429 too_many", st, body)
	}
	// The adopted worker's slot comes free when the new sidecar's watcher sees it end (its exited event):
	// then one spawn of root's must be served.
	p2.mustDo("POST", "/v1/workers/"+root1+"/stop", `{"grace":"1s"}`, 200, nil)
	p2.waitEvent("exited", root1, 30*time.Second)
	if st, body := p2.do("POST", "/v1/workers", scSpec("a", "/bin/true")); st != 201 {
		t.Fatalf("root's spawn after the restarted sidecar published the exit of an adopted worker of root's: %d %s, want 201", st, body)
	}
}
