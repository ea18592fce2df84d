package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// floodFDLimit is the sidecar's RLIMIT_NOFILE in TestSidecarFlood: low enough that a few thousand
// connections from one user reach it, as a larger flood reaches any limit, and high enough for the
// sidecar's defaults to serve a fair share to every uid.
const floodFDLimit = 4096

// Class 5, the sidecar: a socket-group user (a throw-away one) floods a real sidecar with its defaults -
// 4500 idle connections, 300 event streams, 100 connections passing 200 descriptors each, an oversized
// body, oversized headers, 20 slow bodies - while the gateway (root) checks that health and spawns keep
// answering. The flooding uid gets 429 too_many (with Retry-After) once over its share, holds at most its
// share of connections (128) and of streams (16), and its slow requests are ended by the sidecar's timeouts.
// The idle flood must not take every descriptor of the sidecar (EMFILE: health and spawns unanswered),
// nor may the streams and slow bodies all be held.
func TestSidecarFlood(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	attacker, agid := throwawayUser(t)
	p := startGroupSidecar(t, e, agid, scStart{Prefix: []string{"prlimit", fmt.Sprintf("--nofile=%d:%d", floodFDLimit, floodFDLimit), "--"}})
	sock := p.sock
	fl := startFlooder(t, sock, attacker, agid)

	// The gateway's requests: each must answer within a few seconds, flood or not.
	gw := &http.Client{Transport: &http.Transport{DialContext: scUnixClient(sock).Transport.(*http.Transport).DialContext,
		DisableKeepAlives: true}, Timeout: 10 * time.Second}
	gateway := func(when string) {
		t.Helper()
		resp, err := gw.Get("http://sidecar/v1/health")
		if err != nil {
			t.Fatalf("%s: the gateway's health request: %v", when, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: the gateway's health: %d", when, resp.StatusCode)
		}
		resp, err = gw.Post("http://sidecar/v1/workers", "application/json", strings.NewReader(scSpec("a", selfBin, "child", "exit", "0")))
		if err != nil {
			t.Fatalf("%s: the gateway's spawn: %v", when, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("%s: the gateway's spawn: %d %s", when, resp.StatusCode, b)
		}
		var rc receipt
		must(t, json.Unmarshal(b, &rc))
		p.mustDo("GET", "/v1/workers/"+rc.ID+"/wait?timeout=30s", "", 200, nil)
	}

	// Idle connections: the sidecar keeps at most the uid's share, answers the next 429, serves root.
	r := fl.do("idle 4500")
	t.Logf("idle flood: %d connections opened, %d dials failed", r.Opened, r.DialErrors)
	gateway("during the idle flood")
	// Then connections that each send a request: at most the share is served, the rest are told 429.
	if r := fl.do("share 140"); r.Statuses["200"] > 128 || r.Statuses["429 too_many"] < 12 || r.Retry != "1" {
		t.Errorf("140 requests on connections of their own, with the idle flood: %v, Retry-After %q; want at most 128 served, the rest 429 too_many with Retry-After 1", r.Statuses, r.Retry)
	}
	// A connection over the share is held open until its refusal ends (at most 2 s for its headers), so the
	// count must come down to the share once those refusals are done: bounded, a loaded host takes longer.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r := fl.do("count")
		if r.Open <= 128 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the flooding uid holds %d open connections, more than its share of 128 (%d closed), 15 s after its refusals began", r.Open, r.Closed)
			break
		}
	}
	fl.do("drop")

	// Event streams: 16 are served, the rest refused; root's own stream is served meanwhile.
	r = fl.do("streams 300")
	if r.Statuses["200"] != 16 || r.Statuses["429 too_many"] == 0 {
		t.Errorf("300 event streams of one uid: %v; want 16 served and the rest 429 too_many", r.Statuses)
	}
	p.events("?since=0", 1, 10*time.Second)
	gateway("while the streams are held")
	fl.do("drop")

	// Descriptors passed with requests: the sidecar keeps at most 3 of each connection's.
	before := fdCount(t, p.cmd.Process.Pid)
	r = fl.do("fds 100")
	if n := fdCount(t, p.cmd.Process.Pid); n > before+100*5 {
		t.Errorf("100 connections passing 200 descriptors each: the sidecar holds %d descriptors (%d before)", n, before)
	}
	gateway("while descriptors are passed")
	fl.do("drop")

	// Oversized requests are refused without being held.
	if r := fl.do("bigbody"); r.Statuses["413 too_large"] != 1 {
		t.Errorf("a 2 MiB body: %v, want 413 too_large", r.Statuses)
	}
	if r := fl.do("bigheader"); r.Statuses["431"] != 1 {
		t.Errorf("100 KiB of headers: %v, want 431", r.Statuses)
	}

	// Slow bodies are ended at the body timeout (30 s): answered 408 too_slow, or closed.
	done := make(chan floodResult, 1)
	go func() { done <- fl.do("slowbody 20") }()
	gateway("during the slow bodies")
	r = <-done
	if r.Statuses["408 too_slow"]+r.Statuses["closed"] != 20 || r.MaxMillis > 60_000 {
		t.Errorf("20 slow bodies: %v, the last ended after %d ms; want each ended by the sidecar within 60 s", r.Statuses, r.MaxMillis)
	}
	fl.quit()
	gateway("after the flood")
	// The sidecar fitted its connections to its descriptors ((4096 - 512 reserved) / 5 a connection, less
	// the 64 refusals), and told its operator of the flood.
	for _, want := range []string{"serving at most 652 connections at once", `msg="limit reached" limit=conns_per_uid uid=` + strconv.Itoa(attacker)} {
		if !strings.Contains(p.log.String(), want) {
			t.Errorf("the sidecar's log does not say %q:\n%s", want, p.log.String())
		}
	}
}

// Class 5: the socket group's uids together cannot take what the gateway needs. Two throw-away
// users of the socket group, each within its share, fill what the sidecar's totals leave them (small
// limits by flag: 8 connections and 4 streams, 4 and 2 per uid, so the last 4 connections and 2 streams
// are kept for root and the sidecar's uid); the second is told 503 busy. Root (the gateway) still gets an
// event stream, its health and a spawn, never 503 busy.
func TestSidecarFloodKeepsGatewayServed(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	userA, agid := throwawayUser(t)
	userB, _ := throwawayUser(t)
	p := startGroupSidecar(t, e, agid, scStart{},
		"--max-conns", "8", "--max-conns-per-uid", "4", "--max-streams", "4", "--max-streams-per-uid", "2")
	sock := p.sock
	a := startFlooder(t, sock, userA, agid)
	b := startFlooder(t, sock, userB, agid) // in the socket group by its gid

	if r := a.do("streams 2"); r.Statuses["200"] != 2 {
		t.Errorf("the first user's 2 streams: %v, want both served", r.Statuses)
	}
	if r := b.do("streams 2"); r.Statuses["503 busy"] != 2 || r.Retry != "1" {
		t.Errorf("the second user's 2 streams, with 2 of 4 held by the first: %v, Retry-After %q; want both 503 busy (the other 2 are kept), Retry-After 1", r.Statuses, r.Retry)
	}
	// Root's stream, while the socket group holds all the streams it may.
	c, err := net.Dial("unix", sock)
	must(t, err)
	defer c.Close()
	if st, _ := floodAnswer(c, "GET /v1/events?since=0 HTTP/1.1\r\nHost: sidecar\r\n\r\n"); st != "200" {
		t.Errorf("root's event stream while the socket group holds its streams: %s, want 200", st)
	}
	if r := a.do("share 2"); r.Statuses["200"] != 2 {
		t.Errorf("the first user's 2 requests, its share with its 2 streams: %v, want both served", r.Statuses)
	}
	if r := b.do("share 4"); r.Statuses["503 busy"] != 4 {
		t.Errorf("the second user's 4 requests, with 4 of 8 connections held by the first: %v; want each 503 busy (the other 4 are kept)", r.Statuses)
	}
	// The gateway, with the socket group at all it may hold: health, a spawn, its wait.
	gw := &http.Client{Transport: &http.Transport{DialContext: scUnixClient(sock).Transport.(*http.Transport).DialContext,
		DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := gw.Get("http://sidecar/v1/health")
	if err != nil {
		t.Fatalf("root's health while the socket group holds its connections: %v", err)
	}
	hb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("root's health while the socket group holds its connections: %d %s", resp.StatusCode, hb)
	}
	resp, err = gw.Post("http://sidecar/v1/workers", "application/json", strings.NewReader(scSpec("a", selfBin, "child", "exit", "0")))
	if err != nil {
		t.Fatalf("root's spawn: %v", err)
	}
	sb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("root's spawn while the socket group holds its connections: %d %s", resp.StatusCode, sb)
	}
	var rc receipt
	must(t, json.Unmarshal(sb, &rc))
	resp, err = gw.Get("http://sidecar/v1/workers/" + rc.ID + "/wait?timeout=30s")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("root's wait: %v %v", resp, err)
	}
	resp.Body.Close()
	if !strings.Contains(p.log.String(), `msg="limit reached" limit=conns uid=`+strconv.Itoa(userB)) {
		t.Errorf("the sidecar's log does not name the busy refusal of uid %d:\n%s", userB, p.log.String())
	}
}

// flooderProc is a running `child flood` as another user.
type flooderProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	done chan struct{}
}

// startFlooder starts `child flood sock` as uid:gid; it ends at the test's end (stdin closed, then
// SIGKILL by its PID if it has not ended within 30 s).
func startFlooder(t *testing.T, sock string, uid, gid int) *flooderProc {
	t.Helper()
	cmd := asUser(exec.Command(selfBin, "child", "flood", sock), uid, gid)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/", "LANG=C.UTF-8"}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	f := &flooderProc{t: t, cmd: cmd, in: in, out: bufio.NewScanner(out), done: make(chan struct{})}
	f.out.Buffer(nil, 1<<20)
	go func() { _ = cmd.Wait(); close(f.done) }()
	t.Cleanup(f.quit)
	return f
}

// do sends one command and returns its answer; the test fails if none comes within 90 s.
func (f *flooderProc) do(cmd string) floodResult {
	f.t.Helper()
	if _, err := fmt.Fprintln(f.in, cmd); err != nil {
		f.t.Fatalf("flooder: %s: %v", cmd, err)
	}
	got := make(chan bool, 1)
	go func() { got <- f.out.Scan() }()
	select {
	case ok := <-got:
		var r floodResult
		if !ok || json.Unmarshal(f.out.Bytes(), &r) != nil || r.Err != "" {
			f.t.Fatalf("flooder: %s: %q %v (%s)", cmd, f.out.Text(), f.out.Err(), r.Err)
		}
		return r
	case <-time.After(90 * time.Second):
		f.t.Fatalf("flooder: %s: no answer within 90s", cmd)
	}
	return floodResult{}
}

// quit ends the flooder and waits for it, killing it by its PID if it does not end by itself.
func (f *flooderProc) quit() {
	_ = f.in.Close()
	select {
	case <-f.done:
	case <-time.After(30 * time.Second):
		_ = f.cmd.Process.Kill()
		<-f.done
	}
}

// fdCount is how many descriptors process pid has open.
func fdCount(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	must(t, err)
	return len(ents)
}
