package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// scProc is one real `hlaunch sidecar` process serving env e.
type scProc struct {
	t      *testing.T
	e      *env
	sock   string
	cmd    *exec.Cmd
	log    *testutil.Buffer
	client *http.Client
	done   chan struct{}
	how    scStart // how it was started and its flags after the env's: restart starts it so again
	extra  []string
}

// scSocketDir is a short directory for sockets (sun_path is 108 bytes), removed at the end.
func scSocketDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp(tmpBase, "hlsc-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func scUnixClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 128,
	}}
}

// startSidecarProc starts `hlaunch sidecar` on sock with raw cgroups under the env's parent (so the env's
// cleanup removes every worker), waits until it answers, and stops it (SIGTERM) at the end of the test.
func startSidecarProc(t *testing.T, e *env, sock string, extra ...string) *scProc {
	t.Helper()
	return startSidecarProcIn(t, e, sock, scStart{}, extra...)
}

// scStart is how startSidecarProcIn starts the sidecar: in Dir (empty: the test's), behind Prefix (a
// command that execs the rest, as `child session` does).
type scStart struct {
	Dir    string
	Prefix []string
}

// startSidecarProcIn is startSidecarProc with the start-up of how.
func startSidecarProcIn(t *testing.T, e *env, sock string, how scStart, extra ...string) *scProc {
	t.Helper()
	args := []string{"--root", e.Root, "--state-dir", e.State, "sidecar", "--socket", sock,
		"--scope", "cgroup", "--cgroup-parent", e.Parent, "--poll-interval", "20ms"}
	args = append(args, extra...)
	p := &scProc{t: t, e: e, sock: sock, log: &testutil.Buffer{}, client: scUnixClient(sock), done: make(chan struct{}),
		how: how, extra: extra}
	argv := append(append(append([]string{}, how.Prefix...), hlaunchBin), args...)
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Dir = how.Dir
	p.cmd.Env = e.Launcher
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	must(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("sidecar pid %d output:\n%s", p.cmd.Process.Pid, p.log.String())
		}
	})
	p.waitReady()
	return p
}

// restart stops p if it still runs and starts a new sidecar on its socket, as p was started.
func (p *scProc) restart() *scProc {
	p.t.Helper()
	p.stop()
	return startSidecarProcIn(p.t, p.e, p.sock, p.how, p.extra...)
}

// waitReady waits until the sidecar answers /v1/health; it fails the test if it exits or takes 15 s.
func (p *scProc) waitReady() {
	p.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if st, _ := p.do("GET", "/v1/health", ""); st == 200 {
			return
		}
		select {
		case <-p.done:
			p.t.Fatalf("sidecar exited before answering: %s", p.log.String())
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("sidecar did not answer within 15s: %s", p.log.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop ends the sidecar politely (SIGTERM) if it still runs.
func (p *scProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second): // a hung sidecar only: a --warm one stops its slots (scopes: D-Bus calls) first
		p.t.Errorf("sidecar ignored SIGTERM for 60s")
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.client.CloseIdleConnections()
}

// kill9 kills the sidecar with SIGKILL, as a crash would, and reaps it.
func (p *scProc) kill9() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	p.client.CloseIdleConnections()
}

// do sends one request; it returns the status (0 when the connection failed) and the body.
func (p *scProc) do(method, path, body string) (int, []byte) {
	req, err := http.NewRequest(method, "http://sidecar"+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// mustDo is do that fails the test unless the status is want; it decodes the answer into out.
func (p *scProc) mustDo(method, path, body string, want int, out any) {
	p.t.Helper()
	st, b := p.do(method, path, body)
	if st != want {
		p.t.Fatalf("%s %s: %d, want %d: %s", method, path, st, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			p.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// scErrCode returns the stable code of a JSON error answer, or "" when b is not one.
func scErrCode(b []byte) string {
	var eb struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &eb) != nil || eb.Error.Message == "" {
		return ""
	}
	return eb.Error.Code
}

// scSpec is a launch spec for profile with argv.
func scSpec(profile string, argv ...string) string {
	b, _ := json.Marshal(map[string]any{"profile": profile, "argv": argv})
	return string(b)
}

// list returns every record as the sidecar reports it.
func (p *scProc) list() []receipt {
	p.t.Helper()
	var recs []receipt
	p.mustDo("GET", "/v1/workers", "", 200, &recs)
	return recs
}

// scEvent is the part of an event the tests read.
type scEvent struct {
	Seq       uint64 `json:"seq"`
	Type      string `json:"type"`
	ID        string `json:"id"`
	PID       int    `json:"pid"`
	State     string `json:"state"`
	ExitCode  *int   `json:"exit_code"`
	Signal    string `json:"signal"`
	Initial   bool   `json:"initial"`
	UID       *int   `json:"uid"`
	Reason    string `json:"reason"`
	OOMKilled bool   `json:"oom_killed"`
}

// events reads n events from /v1/events?since=0 (the start-up reconciliation and everything since),
// failing after timeout.
func (p *scProc) events(query string, n int, timeout time.Duration) []scEvent {
	p.t.Helper()
	out := p.readEvents(query, timeout, func(seen []scEvent) bool { return len(seen) == n })
	if len(out) < n {
		p.t.Fatalf("got %d of %d events within %s: %+v", len(out), n, timeout, out)
	}
	return out
}

// waitEvent reads /v1/events?since=0 (all the events the sidecar keeps, then each as it happens) until one
// of type typ for worker id, and returns it; it fails the test if none comes within timeout.
func (p *scProc) waitEvent(typ, id string, timeout time.Duration) scEvent {
	p.t.Helper()
	match := func(seen []scEvent) bool {
		return len(seen) > 0 && seen[len(seen)-1].Type == typ && seen[len(seen)-1].ID == id
	}
	seen := p.readEvents("?since=0", timeout, match)
	if !match(seen) {
		p.t.Fatalf("no %s event of %s within %s; the events: %+v", typ, id, timeout, seen)
	}
	return seen[len(seen)-1]
}

// readEvents reads the events of /v1/events<query> until done says so of those read so far (none at first),
// the stream ends or timeout passes, and returns them.
func (p *scProc) readEvents(query string, timeout time.Duration, done func([]scEvent) bool) []scEvent {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://sidecar/v1/events"+query, nil)
	resp, err := p.client.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []scEvent
	sc := bufio.NewScanner(resp.Body)
	for !done(out) && sc.Scan() {
		var e scEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			p.t.Fatalf("event line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// scPython returns a python3 that any uid can run (Debian's first: pyenv shims live under /root).
func scPython(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed for the Python client tests: install the python3 package")
	}
	return p
}

// scClientDir copies the Python client's package (clients/python/hlaunch_client) into dir (readable by
// every uid) and returns dir, which then goes on the PYTHONPATH.
func scClientDir(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join("..", "clients", "python", "hlaunch_client")
	ents, err := os.ReadDir(src)
	must(t, err)
	dst := filepath.Join(dir, "hlaunch_client")
	must(t, os.MkdirAll(dst, 0o755))
	for _, e := range ents {
		if e.IsDir() {
			continue // __pycache__
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
	}
	return dir
}

// scLoadSchema reads one of docs/schema.
func scLoadSchema(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "schema", name))
	must(t, err)
	var s map[string]any
	must(t, json.Unmarshal(b, &s))
	return s
}

// scCgroupsWithProcs returns every cgroup under parent in the v2 hierarchy that has processes, relative to
// the hierarchy root.
func scCgroupsWithProcs(t *testing.T, v2root, parent string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	top := filepath.Join(v2root, parent)
	_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err == nil && len(strings.TrimSpace(string(b))) > 0 {
			rel, _ := filepath.Rel(v2root, p)
			out["/"+rel] = strings.Fields(string(b))
		}
		return nil
	})
	return out
}
