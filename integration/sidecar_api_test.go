package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// scRawSpawn writes one POST /v1/workers request (with an Idempotency-Key when key is not "") on a fresh
// connection to sock and returns the connection: the request is in the sidecar's socket once this returns,
// whether or not the sidecar runs.
func scRawSpawn(t *testing.T, sock, key, body string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", sock)
	must(t, err)
	t.Cleanup(func() { c.Close() })
	hdr := ""
	if key != "" {
		hdr = "Idempotency-Key: " + key + "\r\n"
	}
	req := fmt.Sprintf("POST /v1/workers HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s", hdr, len(body), body)
	_, err = io.WriteString(c, req)
	must(t, err)
	return c
}

// scRawAnswer reads the answer to scRawSpawn's request: its status, its Idempotent-Replay header and body.
func scRawAnswer(t *testing.T, c net.Conn, timeout time.Duration) (int, string, []byte) {
	t.Helper()
	must(t, c.SetReadDeadline(time.Now().Add(timeout)))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading a spawn's answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Idempotent-Replay"), b
}

// spawnKeyed sends one spawn with an Idempotency-Key through the sidecar's client; it returns the status,
// the Idempotent-Replay header and the body.
func (p *scProc) spawnKeyed(key, body string) (int, string, []byte) {
	p.t.Helper()
	req, err := http.NewRequest("POST", "http://sidecar/v1/workers", strings.NewReader(body))
	must(p.t, err)
	req.Header.Set("Idempotency-Key", key)
	resp, err := p.client.Do(req)
	must(p.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Idempotent-Replay"), b
}

// markerLines returns the lines of the marker file each worker appends its PID to ("" lines dropped).
func markerLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	must(t, err)
	return strings.Fields(string(b))
}

// waitMarker waits until every PID in pids has appended itself to the marker file (a worker that started
// writes it first thing), failing after 30 s.
func waitMarker(t *testing.T, path string, pids []int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		have := map[string]bool{}
		for _, l := range markerLines(t, path) {
			have[l] = true
		}
		all := true
		for _, pid := range pids {
			all = all && have[fmt.Sprint(pid)]
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("marker %s: %q after 30s, want the PIDs %v in it", path, markerLines(t, path), pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSidecarIdempotentSpawn: a gateway that retries a spawn with the same Idempotency-Key gets one worker.
// The first request is in the sidecar's socket when the sidecar is stopped (SIGSTOP), the retry comes while
// it is stopped, then it goes on: both answers are 201 with the same receipt, one of them marked
// Idempotent-Replay, and exactly one worker ran (its marker written once). After a SIGKILL and a restart
// the same key is still answered that receipt, the same key with another body is 422
// idempotency_mismatch, and a bad key is 400.
func TestSidecarIdempotentSpawn(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	sock := filepath.Join(scSocketDir(t), "s.sock")
	p := startSidecarProc(t, e, sock)
	// The marker is in profile b's own workspace: the worker runs as that home's owner.
	marker := filepath.Join(e.Root, "profiles", "b", "workspace", "marker")
	body := scSpec("b", "/bin/sh", "-c", "echo $$ >> "+marker+"; exec /bin/sleep 120")
	const key = "cron-42 run/7"

	first := scRawSpawn(t, sock, key, body)
	must(t, p.cmd.Process.Signal(syscall.SIGSTOP))
	stopped := true
	defer func() {
		if stopped {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	retry := scRawSpawn(t, sock, key, body)
	must(t, p.cmd.Process.Signal(syscall.SIGCONT))
	stopped = false
	st1, replay1, b1 := scRawAnswer(t, first, 2*time.Minute)
	st2, replay2, b2 := scRawAnswer(t, retry, 2*time.Minute)
	if st1 != 201 || st2 != 201 {
		t.Fatalf("first %d %s, retry %d %s: want 201 twice", st1, b1, st2, b2)
	}
	var rc1, rc2 receipt
	must(t, json.Unmarshal(b1, &rc1))
	must(t, json.Unmarshal(b2, &rc2))
	if rc1.ID != rc2.ID || rc1.Token != rc2.Token || rc1.PID != rc2.PID {
		t.Fatalf("the two answers name two workers: %s (pid %d) and %s (pid %d)", rc1.ID, rc1.PID, rc2.ID, rc2.PID)
	}
	if (replay1 == "true") == (replay2 == "true") {
		t.Fatalf("Idempotent-Replay: first %q, retry %q: want exactly one \"true\"", replay1, replay2)
	}
	recs := p.list()
	pids := []int{}
	for _, r := range recs {
		pids = append(pids, r.PID)
	}
	waitMarker(t, marker, pids)
	if len(recs) != 1 || len(markerLines(t, marker)) != 1 {
		t.Fatalf("%d records, marker %q: want exactly one worker", len(recs), markerLines(t, marker))
	}

	// The key outlives the sidecar: killed (as a crash) and started again on the same state directory.
	p.kill9()
	p2 := startSidecarProc(t, e, sock)
	st, replay, b := p2.spawnKeyed(key, body)
	var rc3 receipt
	if st != 201 || replay != "true" || json.Unmarshal(b, &rc3) != nil || rc3.ID != rc1.ID {
		t.Fatalf("after a restart: %d replay %q %s, want 201 replay true of %s", st, replay, b, rc1.ID)
	}
	other := scSpec("b", "/bin/sh", "-c", "echo other >> "+marker)
	if st, _, b := p2.spawnKeyed(key, other); st != 422 || scErrCode(b) != "idempotency_mismatch" {
		t.Fatalf("same key, another body: %d %s, want 422 idempotency_mismatch", st, b)
	}
	for _, bad := range []string{strings.Repeat("k", 129), "tab\there"} {
		if st, _, b := p2.spawnKeyed(bad, body); st != 400 || scErrCode(b) != "invalid" || !strings.Contains(string(b), "Idempotency-Key") {
			t.Fatalf("key %q: %d %s, want 400 invalid naming the header", bad, st, b)
		}
	}
	if n := len(p2.list()); n != 1 || len(markerLines(t, marker)) != 1 {
		t.Fatalf("after the repeats: %d records, marker %q: want the one worker", n, markerLines(t, marker))
	}
	// Another key is another spawn.
	st, replay, b = p2.spawnKeyed("cron-43", body)
	var rc4 receipt
	if st != 201 || replay != "" || json.Unmarshal(b, &rc4) != nil || rc4.ID == rc1.ID {
		t.Fatalf("a new key: %d replay %q %s, want a new worker", st, replay, b)
	}
	waitMarker(t, marker, []int{rc1.PID, rc4.PID})
}

// TestSidecarEventHeartbeat: the sidecar's started log line names its socket path; an idle /v1/events stream sends {"type":"heartbeat","seq":0} lines at its
// ?heartbeat period, so that a gateway tells a quiet stream from a dead connection; a period outside
// 1s..60s is 400 invalid naming the parameter.
func TestSidecarEventHeartbeat(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	sock := filepath.Join(scSocketDir(t), "s.sock")
	p := startSidecarProc(t, e, sock)
	// Its started line names the socket clients use, not the name it was bound to before the rename.
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(p.log.String(), "msg=started") {
		if time.Now().After(deadline) {
			t.Fatalf("no started line within 15s: %s", p.log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(p.log.String(), "socket="+sock+" ") {
		t.Fatalf("the started line does not name the socket %s: %s", sock, p.log.String())
	}
	for _, bad := range []string{"100ms", "61s", "soon"} {
		// Bounded: a sidecar that takes the period as a stream answers 200 and sends no end.
		bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(bctx, "GET", "http://sidecar/v1/events?heartbeat="+bad, nil)
		resp, err := p.client.Do(req)
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		bcancel()
		if st := resp.StatusCode; st != 400 || scErrCode(b) != "invalid" || !strings.Contains(string(b), "heartbeat") {
			t.Fatalf("heartbeat=%s: %d %s, want 400 invalid naming heartbeat", bad, resp.StatusCode, b)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://sidecar/v1/events?heartbeat=1s", nil)
	resp, err := p.client.Do(req)
	must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for i := 0; i < 2; i++ {
		if !sc.Scan() {
			t.Fatalf("heartbeat %d: the stream ended or stayed silent for 30s: %v", i, sc.Err())
		}
		var ev map[string]any
		must(t, json.Unmarshal(sc.Bytes(), &ev))
		if ev["type"] != "heartbeat" || ev["seq"] != float64(0) {
			t.Fatalf("line %d on an idle stream: %s, want a heartbeat with seq 0", i, sc.Bytes())
		}
	}
}

// scErr is a JSON error answer with its optional field and reason.
type scErr struct {
	Code, Message, Field, Reason string
}

func scErrOf(t *testing.T, b []byte) scErr {
	t.Helper()
	var eb struct {
		Error scErr `json:"error"`
	}
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error.Code == "" {
		t.Fatalf("not a JSON error: %s", b)
	}
	return eb.Error
}

// TestSidecarTypedErrors: every refusal of a spawn says which spec field is at fault ("field") and why
// ("reason"), in spec field names and never in the CLI's flags: an unknown profile, a .env that is not
// UTF-8, a symbolic link for a .env and an unknown field are told apart by reason; a detached worker's
// pids at or below its shim's share and a held key name limits.pids and key, not --pids and --key. A size
// in limits is taken as the CLI takes it ("512M"), and a bad one names limits.memory.
func TestSidecarTypedErrors(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	e.profile("c", "C=1\n")
	must(t, os.WriteFile(filepath.Join(e.Root, "profiles", "c", ".env"), []byte("C=\xff\xfe\n"), 0o600))
	dHome := e.profile("d", "D=1\n")
	must(t, os.Remove(filepath.Join(dHome, ".env")))
	must(t, os.Symlink(filepath.Join(e.Root, ".env"), filepath.Join(dHome, ".env")))
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))

	sleep := []string{"/bin/sleep", "120"}
	spec := func(profile string, extra map[string]any) string {
		m := map[string]any{"profile": profile, "argv": sleep}
		for k, v := range extra {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	var held receipt
	p.mustDo("POST", "/v1/workers", spec("b", map[string]any{"key": "cron-42"}), 201, &held)

	for _, tc := range []struct {
		name, body          string
		status              int
		code, reason, field string
	}{
		{"unknown profile", spec("nosuch", nil), 400, "invalid", "unknown_profile", "profile"},
		{"env not UTF-8", spec("c", nil), 400, "invalid", "env_not_utf8", ""},
		{"env symlink", spec("d", nil), 400, "invalid", "env_symlink", ""},
		{"unknown field", spec("b", map[string]any{"sandbx": true}), 400, "invalid", "unknown_field", "sandbx"},
		{"unknown limit", spec("b", map[string]any{"limits": map[string]any{"memroy": 1}}), 400, "invalid", "unknown_field", "limits.memroy"},
		{"bad size", spec("b", map[string]any{"limits": map[string]any{"memory": "lots"}}), 400, "invalid", "bad_size", "limits.memory"},
		{"bad duration", spec("b", map[string]any{"timeout": "10"}), 400, "invalid", "bad_duration", "timeout"},
		{"wrong type", spec("b", map[string]any{"sandbox": "yes"}), 400, "invalid", "bad_type", "sandbox"},
		{"pids for the shim", spec("b", map[string]any{"limits": map[string]any{"pids": 4}}), 400, "invalid", "", "limits.pids"},
		{"key held", spec("b", map[string]any{"key": "cron-42"}), 409, "key_held", "key_held", "key"},
	} {
		st, b := p.do("POST", "/v1/workers", tc.body)
		if st != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, st, b, tc.status)
			continue
		}
		got := scErrOf(t, b)
		if got.Code != tc.code || got.Reason != tc.reason || got.Field != tc.field {
			t.Errorf("%s: code %q reason %q field %q (%s), want %q %q %q", tc.name, got.Code, got.Reason, got.Field, got.Message, tc.code, tc.reason, tc.field)
		}
		for _, w := range strings.Fields(got.Message) {
			if strings.HasPrefix(strings.Trim(w, `"'(`), "--") {
				t.Errorf("%s: the message names a CLI flag (%s): %s", tc.name, w, got.Message)
			}
		}
	}
	if n := len(p.list()); n != 1 {
		t.Fatalf("%d workers after the refusals, want only the key's holder", n)
	}

	// Sizes as the CLI takes them, and as numbers.
	for _, mem := range []any{"512M", 536870912} {
		var rc struct {
			Limits struct {
				Memory int64 `json:"memory"`
			} `json:"limits"`
		}
		p.mustDo("POST", "/v1/workers", spec("b", map[string]any{"limits": map[string]any{"memory": mem}}), 201, &rc)
		if rc.Limits.Memory != 512<<20 {
			t.Fatalf("limits.memory %v: applied %d, want %d", mem, rc.Limits.Memory, 512<<20)
		}
	}
}

// TestSidecarInheritStdioGatewayGone: what a worker with "stdio": "inherit" does when the gateway that
// passed its stdout dies (docs/sidecar.md, "Worker output and passed descriptors"): the next write gets
// EPIPE with SIGPIPE, and a worker that does not ignore SIGPIPE ends by it. A worker with the default log
// writes on through the same end of its gateway. Both are the documented behaviour a gateway is steered by.
func TestSidecarInheritStdioGatewayGone(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	loop := []string{"/bin/sh", "-c", "while :; do echo tick; /bin/sleep 0.05; done"}
	inherit, _ := json.Marshal(map[string]any{"profile": "b", "stdio": "inherit", "argv": loop})
	logged, _ := json.Marshal(map[string]any{"profile": "b", "argv": loop})

	c := scDialRaw(t, p.sock)
	pr, pw, err := os.Pipe()
	must(t, err)
	devnull, err := os.Open(os.DevNull)
	must(t, err)
	defer devnull.Close()
	st, body := scRawExchange(t, c, scPost(string(inherit)), int(devnull.Fd()), int(pw.Fd()), int(pw.Fd()))
	pw.Close()
	if st != 201 {
		t.Fatalf("inherit spawn: %d %s", st, body)
	}
	var piped receipt
	must(t, json.Unmarshal([]byte(body), &piped))
	var withLog receipt
	p.mustDo("POST", "/v1/workers", string(logged), 201, &withLog)
	must(t, pr.SetReadDeadline(time.Now().Add(30*time.Second)))
	if line, err := bufio.NewReader(pr).ReadString('\n'); line != "tick\n" {
		t.Fatalf("the inherit worker's output on the gateway's pipe: %q %v", line, err)
	}
	pr.Close() // the gateway is gone: nothing reads the worker's stdout any more

	var end receipt
	p.mustDo("GET", "/v1/workers/"+piped.ID+"/wait?timeout=60s", "", 200, &end)
	if end.State != "exited" || end.Signal != "SIGPIPE" {
		t.Fatalf("the inherit worker after its gateway's pipe closed: %s signal %q code %v, want ended by SIGPIPE", end.State, end.Signal, end.ExitCode)
	}
	var rec receipt
	p.mustDo("GET", "/v1/workers/"+withLog.ID, "", 200, &rec)
	if rec.State != "running" {
		t.Fatalf("the logged worker: %s, want running", rec.State)
	}
}
