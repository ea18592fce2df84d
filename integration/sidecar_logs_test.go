package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// getLog is GET /v1/workers/{id}/logs?query: status, Log-Start, body.
func (p *scProc) getLog(id, query string, timeout time.Duration) (int, string, []byte) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://sidecar/v1/workers/"+id+"/logs"+query, nil)
	resp, err := p.client.Do(req)
	if err != nil {
		p.t.Fatalf("logs of %s%s: %v", id, query, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatalf("logs of %s%s: the body did not end within %s: %v (%d bytes)", id, query, timeout, err, len(b))
	}
	return resp.StatusCode, resp.Header.Get("Log-Start"), b
}

// TestSidecarWorkerLogs: GET /v1/workers/{id}/logs serves a worker's log by offsets that count from its
// first byte across rotations (Log-Start the oldest still held), follows a running worker until it ended
// and its output is drained, answers the same after a sidecar restart, 404 for an unknown worker and 409
// no_log for a worker whose output is not logged.
func TestSidecarWorkerLogs(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	sock := filepath.Join(scSocketDir(t), "s.sock")
	p := startSidecarProc(t, e, sock)
	ws := filepath.Join(e.Root, "profiles", "b", "workspace")
	written, release := filepath.Join(ws, "written"), filepath.Join(ws, "release")
	script := `i=0; while [ $i -lt 20000 ]; do echo "line $i"; i=$((i+1)); done; : > ` + written +
		`; while [ ! -e ` + release + ` ]; do /bin/sleep 0.05; done; echo "after release"`
	var want strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	spec, _ := json.Marshal(map[string]any{"profile": "b", "argv": []string{"/bin/sh", "-c", script}, "log_max": 4096})
	var rc receipt
	p.mustDo("POST", "/v1/workers", string(spec), 201, &rc)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(written); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker did not write its lines within 60s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	full := want.String()
	// What the worker wrote is in the log once its shim has copied it: wait for the whole of it. More than
	// three times the shim's 64 KiB chunk: the log rotates at 4096 bytes at least twice.
	var start int64
	var body []byte
	for {
		st, ls, b := p.getLog(rc.ID, "", 30*time.Second)
		if st != 200 {
			t.Fatalf("logs: %d %s", st, b)
		}
		n, err := strconv.ParseInt(ls, 10, 64)
		if err != nil {
			t.Fatalf("Log-Start %q: %v", ls, err)
		}
		start, body = n, b
		if start+int64(len(body)) == int64(len(full)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if start <= 0 || start+int64(len(body)) != int64(len(full)) || string(body) != full[start:] {
		t.Fatalf("Log-Start %d, %d bytes: want the tail of the %d bytes written, rotated at 4096 (Log-Start > 0)", start, len(body), len(full))
	}
	mid := start + 100
	if st, ls, b := p.getLog(rc.ID, fmt.Sprintf("?offset=%d", mid), 30*time.Second); st != 200 || ls != fmt.Sprint(start) || string(b) != full[mid:] {
		t.Fatalf("offset %d: %d Log-Start %s, %d bytes, want %d from there", mid, st, ls, len(b), len(full)-int(mid))
	}
	if st, _, b := p.getLog(rc.ID, "?offset=1", 30*time.Second); st != 200 || string(b) != full[start:] {
		t.Fatalf("offset 1 (before Log-Start): %d, %d bytes: want from Log-Start", st, len(b))
	}

	// Follow from the end: the answer stays open, gets the worker's last line, and ends with the worker.
	type answer struct {
		st int
		b  []byte
	}
	done := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://sidecar/v1/workers/%s/logs?follow=1&offset=%d", rc.ID, len(full)), nil)
		resp, err := p.client.Do(req)
		if err != nil {
			done <- answer{0, []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- answer{resp.StatusCode, b}
	}()
	must(t, os.WriteFile(release, nil, 0o644))
	select {
	case a := <-done:
		if a.st != 200 || string(a.b) != "after release\n" {
			t.Fatalf("follow: %d %q, want the last line and the end", a.st, a.b)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("follow did not end within 90s of the worker's end")
	}
	full += "after release\n"
	// The last line may have rotated the log again: the ended worker's log is read whole once more.
	st, ls, b := p.getLog(rc.ID, "", 30*time.Second)
	end, _ := strconv.ParseInt(ls, 10, 64)
	if st != 200 || end < start || string(b) != full[end:] {
		t.Fatalf("the ended worker's log: %d Log-Start %s, %d bytes, want the tail of %d bytes", st, ls, len(b), len(full))
	}

	// The same bytes after a sidecar restart, for the ended worker.
	p.kill9()
	p2 := startSidecarProc(t, e, sock)
	if st, ls2, b2 := p2.getLog(rc.ID, "", 30*time.Second); st != 200 || ls2 != ls || string(b2) != string(b) {
		t.Fatalf("after a restart: %d Log-Start %s, %d bytes, want %s and the same %d bytes", st, ls2, len(b2), ls, len(b))
	}
	// hlaunch logs reads the same bytes by the same offsets, and refuses an unknown worker with 125.
	cli := func(args ...string) ([]byte, int) {
		cmd := exec.Command(hlaunchBin, append([]string{"--root", e.Root, "--state-dir", e.State, "logs"}, args...)...)
		cmd.Env = e.Launcher
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("hlaunch logs: %v", err)
		}
		return out, code
	}
	if out, code := cli("--offset", fmt.Sprint(end+5), rc.ID); code != 0 || string(out) != full[end+5:] {
		t.Fatalf("hlaunch logs --offset %d: exit %d, %d bytes, want %d", end+5, code, len(out), len(full)-int(end)-5)
	}
	if out, code := cli("-f", rc.ID); code != 0 || string(out) != full[end:] {
		t.Fatalf("hlaunch logs -f of an ended worker: exit %d, %d bytes, want %d and the end", code, len(out), len(full)-int(end))
	}
	if _, code := cli("w-000000000000"); code != 125 {
		t.Fatalf("hlaunch logs of an unknown worker: exit %d, want 125", code)
	}
	if st, _, b := p2.getLog("w-000000000000", "", 30*time.Second); st != 404 || scErrCode(b) != "not_found" {
		t.Fatalf("unknown worker: %d %s, want 404 not_found", st, b)
	}
	c := scDialRaw(t, sock)
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	must(t, err)
	defer devnull.Close()
	inherit, _ := json.Marshal(map[string]any{"profile": "b", "stdio": "inherit", "argv": []string{"/bin/true"}})
	st, raw := scRawExchange(t, c, scPost(string(inherit)), int(devnull.Fd()), int(devnull.Fd()), int(devnull.Fd()))
	var unlogged receipt
	if st != 201 || json.Unmarshal([]byte(raw), &unlogged) != nil {
		t.Fatalf("inherit spawn: %d %s", st, raw)
	}
	if st, _, b := p2.getLog(unlogged.ID, "", 30*time.Second); st != 409 || scErrCode(b) != "no_log" {
		t.Fatalf("a worker without a log: %d %s, want 409 no_log", st, b)
	}
}

// A worker's wait answers its final record, and the log it kept is whole by then: the record has its
// ended_at (written by the shim once it has drained the worker's output into the log), and the log holds
// every byte the worker wrote. A gateway reads the log right after the wait. On the old code the wait
// answered as soon as the exit status was written, before the drain: half the answers for a quick worker
// had no ended_at, and a log read then could be short.
func TestSidecarWaitAnswersWithTheLogDrained(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	for _, scope := range []string{"none", "cgroup"} {
		t.Run(scope, func(t *testing.T) { waitAnswersDrained(t, scope) })
	}
}

func waitAnswersDrained(t *testing.T, scope string) {
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--scope", scope)
	const n = 3000 // lines of "line N\n", about 25 KB
	var want strings.Builder
	for i := range n {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo "line $i"; i=$((i+1)); done`, n)
	spec, _ := json.Marshal(map[string]any{"profile": "b", "argv": []string{"/bin/sh", "-c", script}})
	for round := range 20 {
		var rc, fin receipt
		p.mustDo("POST", "/v1/workers", string(spec), 201, &rc)
		p.mustDo("GET", "/v1/workers/"+rc.ID+"/wait?timeout=30s", "", 200, &fin)
		if fin.EndedAt == "" || fin.ExitCode == nil || *fin.ExitCode != 0 {
			t.Fatalf("round %d: the wait's final record: ended_at %q, exit %v; want ended_at set and exit 0", round, fin.EndedAt, fin.ExitCode)
		}
		if st, _, b := p.getLog(rc.ID, "", 30*time.Second); st != 200 || string(b) != want.String() {
			t.Fatalf("round %d: the log read right after the wait: %d, %d bytes; want 200 and all %d", round, st, len(b), want.Len())
		}
	}
}
