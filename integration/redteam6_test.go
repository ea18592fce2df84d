package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// redteam6IdemBody is the spawn body of the flooder's "idem" command, byte for byte what the gateway of
// TestRedteam6IdemKeysArePerPeer sends for the same job.
const redteam6IdemBody = `{"argv":["/bin/true"],"profile":"a"}`

// floodIdem sends one spawn of body with Idempotency-Key key on c and returns its status (with the error
// code, as floodExchange does), its answer and whether it was a replay.
func floodIdem(c net.Conn, key, body string) (status string, answer []byte, replay bool) {
	_ = c.SetDeadline(time.Now().Add(70 * time.Second))
	head := fmt.Sprintf("POST /v1/workers HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\nIdempotency-Key: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", key, len(body), body)
	if _, err := io.WriteString(c, head); err != nil {
		return "closed", nil, false
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "closed", nil, false
	}
	defer resp.Body.Close()
	answer, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	status = strconv.Itoa(resp.StatusCode)
	if code := scErrCode(answer); code != "" {
		status += " " + code
	}
	return status, answer, resp.Header.Get("Idempotent-Replay") == "true"
}

// idemSpawn is the gateway's (root's) spawn of body with Idempotency-Key key: its status, error code,
// receipt and whether it was a replay.
func (p *scProc) idemSpawn(key, body string) (int, string, receipt, bool) {
	p.t.Helper()
	req, err := http.NewRequest("POST", "http://sidecar/v1/workers", strings.NewReader(body))
	must(p.t, err)
	req.Header.Set("Idempotency-Key", key)
	resp, err := p.client.Do(req)
	must(p.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var rc receipt
	if resp.StatusCode == 201 {
		must(p.t, json.Unmarshal(b, &rc))
	}
	return resp.StatusCode, scErrCode(b), rc, resp.Header.Get("Idempotent-Replay") == "true"
}

// Red team 6 (issue 24, class 8): the idempotency keys of a sidecar were one namespace for every peer of
// its socket. A throw-away socket-group user who learns or guesses the gateway's key for a job (hermes
// derives a cron run's key from the job and the run) takes it first: with another body, the gateway's own
// spawn of that job is refused 422 idempotency_mismatch and the job never runs; with the gateway's body,
// the job runs when the attacker says, and the gateway's spawn is answered the attacker's worker as its
// own. The other way round, the user's spawn with the gateway's key was answered the gateway's receipt
// (its token) instead of a worker of its own. On the old code the gateway got 422 and the user the
// gateway's receipt; now a key is the peer uid's own: each gets a worker of its own, and each uid's repeat
// still replays its own.
func TestRedteam6IdemKeysArePerPeer(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	user, gid := throwawayUser(t)
	p := startGroupSidecar(t, e, gid, scStart{})
	u := startFlooder(t, p.sock, user, gid)

	// The user takes the gateway's key job-1 first, with another body than the gateway's.
	if r := u.do("idem 1"); r.Statuses["201"] != 1 {
		t.Fatalf("the user's spawn with key job-1: %v, want 201", r.Statuses)
	}
	gwBody := scSpec("a", "/bin/sh", "-c", "exit 0")
	st, code, rc, replay := p.idemSpawn("job-1", gwBody)
	if st != 201 || replay {
		t.Fatalf("the gateway's spawn of its job with key job-1, taken first by uid %d with another body: %d %s (replay %v), want 201 and a worker of its own", user, st, code, replay)
	}
	if st, _, rc2, replay := p.idemSpawn("job-1", gwBody); st != 201 || !replay || rc2.ID != rc.ID {
		t.Fatalf("the gateway's repeat of job-1: %d, replay %v, id %s; want its own worker %s replayed", st, replay, rc2.ID, rc.ID)
	}

	// The gateway's key job-2, with the body the user sends too.
	st, code, gw2, _ := p.idemSpawn("job-2", redteam6IdemBody)
	if st != 201 {
		t.Fatalf("the gateway's spawn with key job-2: %d %s", st, code)
	}
	r := u.do("idem 2")
	if r.Statuses["201"] != 1 || len(r.Tokens) != 1 || r.Tokens[0] == gw2.Token || r.IDs[0] == gw2.ID {
		t.Fatalf("the user's spawn with the gateway's key job-2 and its body: %v, ids %v; want a worker of its own (201, not a replay of the gateway's %s)", r.Statuses, r.IDs, gw2.ID)
	}
	if r2 := u.do("idem 2"); r2.Statuses["201 replay"] != 1 || len(r2.IDs) != 1 || r2.IDs[0] != r.IDs[0] {
		t.Fatalf("the user's repeat of job-2: %v %v, want its own worker %s replayed", r2.Statuses, r2.IDs, r.IDs[0])
	}
}

// Red team 6 (issue 24, class 8): --max-workers-per-uid forgot who ran what when the sidecar restarted.
// A new sidecar adopted the running workers into a bucket of their own (no record said which peer asked
// for them), so a throw-away socket-group user that held its share of running workers got a whole new
// share after each restart (an upgrade, a crash, a host's unit restarted): with enough restarts its
// workers filled --max-workers and the gateway was answered 503 busy. On the old code the user's spawns
// after the restart were served past its share; now the sidecar keeps the peer uid of each worker it
// spawns (sidecar-peers/) and an adopted worker counts against that uid's share again.
func TestRedteam6WorkerShareSurvivesRestart(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	user, gid := throwawayUser(t)
	p := startGroupSidecar(t, e, gid, scStart{}, "--max-workers", "8", "--max-workers-per-uid", "2")
	u := startFlooder(t, p.sock, user, gid)
	if r := u.do("spawn 3"); r.Statuses["201"] != 2 || r.Statuses["429 too_many"] != 1 {
		t.Fatalf("the user's 3 spawns with --max-workers-per-uid 2: %v, want 2 started, then 429 too_many", r.Statuses)
	}
	p2 := p.restart()
	var h struct{ Running int }
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p2.mustDo("GET", "/v1/health", "", 200, &h); h.Running == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted sidecar tracks %d running workers, want the user's 2", h.Running)
		}
	}
	if r := u.do("spawn 1"); r.Statuses["429 too_many"] != 1 {
		t.Fatalf("the user's spawn to a restarted sidecar that adopted its 2 running workers: %v, want 429 too_many (its share is held)", r.Statuses)
	}
	// The share comes free as before once one of them ends.
	recs := p2.list()
	for _, rc := range recs {
		if rc.State == "running" {
			p2.mustDo("POST", "/v1/workers/"+rc.ID+"/stop", `{"grace":"1s"}`, 200, nil)
			break
		}
	}
	if r := u.do("spawn-retry 1"); r.Statuses["201"] != 1 {
		t.Fatalf("the user's spawn after one of its adopted workers was stopped: %v, want 201", r.Statuses)
	}
}

// Red team 6 (issue 24, class 8): a peer of the socket makes the sidecar hold the whole state in memory
// once per connection. GET /v1/workers (without limit, or with the largest page, 10,000) read every
// record of the answer into memory and encoded all of them before the first byte went out, so each
// connection that asks and then reads nothing holds the whole list twice (the records and their
// encoding) for as long as the write waits: memory grows with the kept records times the connections
// (1,000 ended records of 4 KiB of argv each, times a socket-group user's 128 connections, is a
// gigabyte). A throw-away socket-group user sends GET /v1/workers on 48 connections (every other one with
// limit=10000) and reads no more than the answers' heads, beside 1,000 kept records of 4 KiB of argv each
// (copies of one real worker's record under new ids). On the old code the sidecar's resident memory grew
// by about the list's size per connection; now a list is written one page at a time, and it grows by at
// most a page per connection.
func TestRedteam6ListHeldByUnreadAnswers(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	user, gid := throwawayUser(t)
	p := startGroupSidecar(t, e, gid, scStart{})
	var rc receipt
	p.mustDo("POST", "/v1/workers", scSpec("a", "/bin/true", strings.Repeat("x", 4000)), 201, &rc)
	p.mustDo("GET", "/v1/workers/"+rc.ID+"/wait?timeout=30s", "", 200, nil)
	p.stop()
	rec, err := os.ReadFile(filepath.Join(e.State, "workers", rc.ID+".json"))
	must(t, err)
	const copies = 1000
	for i := range copies {
		id := fmt.Sprintf("w-%012x", 0xa00000000000+i)
		must(t, os.WriteFile(filepath.Join(e.State, "workers", id+".json"), []byte(strings.ReplaceAll(string(rec), rc.ID, id)), 0o600))
	}
	p = p.restart()
	if n := len(p.list()); n != copies+1 {
		t.Fatalf("the sidecar lists %d records, want %d", n, copies+1)
	}
	listSize := len(rec) * copies
	before := vmRSS(t, p.cmd.Process.Pid)
	u := startFlooder(t, p.sock, user, gid)
	const conns = 48
	if r := u.do(fmt.Sprint("list ", conns)); r.Opened != conns {
		t.Fatalf("the user's unread lists: %+v, want %d sent", r, conns)
	}
	// Every handler has begun its answer and waits on the socket: the resident memory holds what each
	// keeps for the rest.
	grown := vmRSS(t, p.cmd.Process.Pid) - before
	if limit := conns * listSize / 3; grown > limit {
		t.Fatalf("the sidecar's resident memory grew by %d KiB with %d unread lists of %d KiB, want under %d KiB (a page per connection, not the list)",
			grown>>10, conns, listSize>>10, limit>>10)
	}
	t.Logf("resident memory grew by %d KiB with %d unread lists of %d KiB", grown>>10, conns, listSize>>10)
}

// vmRSS is process pid's resident memory in bytes.
func vmRSS(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, err := strconv.Atoi(f[1])
			must(t, err)
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
