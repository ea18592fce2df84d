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
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The red team's fourth round, its second theme: what a worker or a socket peer can make hlaunch keep or
// consume without bound (docs/security.md, "What a privileged launch inherits, and what nothing
// bounds"). The first theme is in redteam4_test.go. Each test passes while the boundary holds.

// A launch with a key of its own (a cron execution's) leaves no lock file behind, and the key's holder
// entry goes with the worker's record; the key still excludes a second launch while its worker runs. Every
// distinct key a caller (a sidecar peer, a cron with a key per execution, as hermes'
// cron-<job>-exec-<execution> names are) uses would otherwise stay as a file in <state>/keys until reboot,
// beyond every retention bound: 20 launches leave no file.
func TestRedteam4KeyLocksAreNotKept(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	const n = 20
	for i := range n {
		r := e.run("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--detach", "--key", "cron-7-exec-"+strconv.Itoa(i), "--", "true")
		if r.Code != 0 {
			t.Fatalf("launch %d: exit %d %s", i, r.Code, r.Stderr)
		}
	}
	// No lock file stays; a key's holder entry (the key index) stays as long as the record it names, and
	// goes with it: the entries are bounded by the records kept.
	keysLeft := func(suffix string) []string {
		ents, err := os.ReadDir(filepath.Join(e.State, "keys"))
		must(t, err)
		var names []string
		for _, ent := range ents {
			if strings.HasSuffix(ent.Name(), suffix) {
				names = append(names, ent.Name())
			}
		}
		return names
	}
	if left := keysLeft(".lock"); len(left) != 0 {
		t.Errorf("%d detached launches with distinct keys left %d lock files in %s/keys; want none", n, len(left), e.State)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r := e.run("ps", "--json"); !strings.Contains(r.Stdout, `"running"`) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the 20 workers still run after 60 s: %s", r.Stdout)
		}
	}
	if r := e.run("gc", "--keep", "0"); r.Code != 0 {
		t.Fatalf("gc --keep 0: exit %d %s", r.Code, r.Stderr)
	}
	if left := keysLeft(""); len(left) != 0 {
		t.Errorf("after gc removed the 20 ended workers, %s/keys holds %v; want nothing", e.State, left)
	}
	// The key still holds while its worker runs, and is free again once it ended.
	r := e.run("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--detach", "--key", "held", "--", "sleep", "30")
	if r.Code != 0 {
		t.Fatalf("the holder: exit %d %s", r.Code, r.Stderr)
	}
	if r2 := e.run("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--detach", "--key", "held", "--", "true"); r2.Code != 73 {
		t.Errorf("a second launch with the held key: exit %d %s; want 73", r2.Code, r2.Stderr)
	}
	var rc receipt
	must(t, json.Unmarshal([]byte(r.Stdout), &rc))
	if s := e.run("stop", rc.ID); s.Code != 0 {
		t.Fatalf("stop %s: exit %d %s", rc.ID, s.Code, s.Stderr)
	}
	if r3 := e.run("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--detach", "--key", "held", "--", "true"); r3.Code != 0 {
		t.Errorf("the key after its worker ended: exit %d %s; want 0", r3.Code, r3.Stderr)
	}
}

// What a sidecar peer sends is kept: each spawn's argv and key go into the worker's record (up to 1,000
// ended ones kept) and its ledger entry (up to 10,000), both by default under /run (memory). Bounds that
// counted records, not bytes, would let a peer's spawn with an argv of most of a 1 MiB body leave a
// 0.6 MiB record and a 0.6 MiB ledger entry, so that a socket-group user could fill /run with about 11 GB.
// The recorded argv is its first 4 KiB (then one element saying how much was left out), the worker still
// runs with its whole argv, and a key longer than 256 bytes is refused (400, naming the key field, without
// echoing it).
func TestRedteam4PeerSizesItsRecords(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	big := strings.Repeat("x", 100_000)
	out := filepath.Join(workerDir(t), "argv-bytes") // the worker runs as its home's owner
	argv := []string{"sh", "-c", `n=0; for a; do n=$((n + ${#a})); done; echo "$n" > ` + out, "sh"}
	for range 6 {
		argv = append(argv, big)
	}
	body, err := json.Marshal(map[string]any{"profile": "b", "argv": argv})
	must(t, err)
	var rc receipt
	p.mustDo("POST", "/v1/workers", string(body), 201, &rc)
	p.mustDo("GET", "/v1/workers/"+rc.ID+"/wait?timeout=60s", "", 200, nil)
	if b, err := os.ReadFile(out); err != nil || strings.TrimSpace(string(b)) != "600000" {
		t.Errorf("the worker's own argv: %q %v; want its 600000 bytes, whole", b, err)
	}
	for _, f := range []string{filepath.Join(e.State, "workers", rc.ID+".json"), filepath.Join(e.State, "ledger", rc.ID+".json")} {
		st, err := os.Stat(f)
		must(t, err)
		if st.Size() > 16<<10 {
			t.Errorf("%s holds %d bytes for one spawn of a %d-byte body; want at most 16 KiB", f, st.Size(), len(body))
		}
	}
	long, _ := json.Marshal(map[string]any{"profile": "b", "argv": []string{"true"}, "key": strings.Repeat("k", 300_000)})
	st, b := p.do("POST", "/v1/workers", string(long))
	if st != 400 || !strings.Contains(string(b), "key") || len(b) > 4096 {
		t.Errorf("a 300,000-byte key: %d %.200q (%d bytes); want 400 naming the key field, without echoing it", st, b, len(b))
	}
}

// What a socket peer's descriptors leave in the sidecar and give a worker. A peer sends many descriptors
// (SCM_RIGHTS: 8 with each of 20 requests on one connection, more than the 3 a spawn uses) and an O_PATH
// descriptor of a directory (the hermes root) as a sandboxed worker's stdin. Holds: the sidecar keeps at
// most three per connection and closes them all with it, and the directory is refused whatever its open
// mode (fstat sees a directory through O_PATH too): the target never runs.
func TestRedteam4PeerDescriptorsHeld(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	sock := filepath.Join(scSocketDir(t), "s.sock")
	p := startSidecarProc(t, e, sock)
	fdDir := "/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/fd"
	count := func() int {
		ents, err := os.ReadDir(fdDir)
		must(t, err)
		return len(ents)
	}
	before := count()
	var fds []int
	for range 8 {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		must(t, err)
		fds = append(fds, fd)
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	c, err := net.Dial("unix", sock)
	must(t, err)
	br := bufio.NewReader(c)
	for i := range 20 {
		req := "GET /v1/health HTTP/1.1\r\nHost: sidecar\r\n\r\n"
		_, _, err := c.(*net.UnixConn).WriteMsgUnix([]byte(req), unix.UnixRights(fds...), nil)
		must(t, err)
		resp, err := http.ReadResponse(br, nil)
		must(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n := count(); n > before+1+3 {
			t.Fatalf("after request %d with 8 descriptors each, the sidecar holds %d descriptors (%d before): want at most the connection and 3 passed ones more", i+1, n, before)
		}
	}
	c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for count() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := count(); n > before {
		t.Errorf("the peer's connection closed: the sidecar still holds %d descriptors, %d before", n, before)
	}
	// An O_PATH descriptor of a directory as a sandboxed worker's stdin (the refusal is the init stub's:
	// it reaches the worker's stderr, the pipe here).
	dir, err := unix.Open(e.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(dir)
	pr, pw, err := os.Pipe()
	must(t, err)
	defer pr.Close()
	probe := "ls:/proc/self/fd/0/profiles"
	spec, _ := json.Marshal(map[string]any{"profile": "b", "sandbox": true, "stdio": "inherit", "argv": []string{selfBin, "child", "report", probe}})
	st, body := sidecarSpawnWithFDs(t, sock, string(spec), dir, int(pw.Fd()), int(pw.Fd()))
	pw.Close()
	out, _ := io.ReadAll(pr)
	if strings.Contains(string(out), "ok:") || !strings.Contains(string(out)+body, "stdin is a directory") {
		t.Errorf("an O_PATH directory sent as a sandboxed worker's stdin: %d %s; the worker printed %q; want the stub's refusal", st, body, out)
	}
}

// The ledger's bound never removes the record of an execution that has not ended, and an execution the
// host rebooted under never records its end: each reboot with workers running would leave their records
// in a ledger on a persistent disk (where docs/cli.md says to put it) for ever, beyond --ledger-keep and
// --ledger-max-age. An execution of another boot has ended, and gc collects it. Here the previous boot's
// records are the test's copies of a real one with another boot id and no end, older than it.
func TestRedteam4LedgerKeepsOtherBootsForever(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	r := e.run("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--detach", "--", "true")
	if r.Code != 0 {
		t.Fatalf("launch: exit %d %s", r.Code, r.Stderr)
	}
	var rc receipt
	must(t, json.Unmarshal([]byte(r.Stdout), &rc))
	if w := e.run("wait", "--timeout", "60s", rc.ID); w.Code != 1 && w.Code != 0 {
		t.Fatalf("wait: exit %d %s", w.Code, w.Stderr)
	}
	ledger := filepath.Join(e.State, "ledger")
	raw, err := os.ReadFile(filepath.Join(ledger, rc.ID+".json"))
	must(t, err)
	var rec map[string]any
	must(t, json.Unmarshal(raw, &rec))
	old := time.Now().Add(-time.Hour)
	var stale []string
	for i := range 3 {
		id := fmt.Sprintf("w-00000000000%d", i)
		rec["id"], rec["boot_id"] = id, "00000000-0000-4000-8000-00000000000"+strconv.Itoa(i)
		delete(rec, "ended_at")
		delete(rec, "exit_code")
		b, err := json.Marshal(rec)
		must(t, err)
		p := filepath.Join(ledger, id+".json")
		must(t, os.WriteFile(p, b, 0o600))
		must(t, os.Chtimes(p, old, old))
		stale = append(stale, id)
	}
	if g := e.run("gc", "--ledger-keep", "1", "--json"); g.Code != 0 {
		t.Fatalf("gc: exit %d %s", g.Code, g.Stderr)
	}
	for _, id := range stale {
		if _, err := os.Stat(filepath.Join(ledger, id+".json")); err == nil {
			t.Errorf("gc --ledger-keep 1 kept %s, an execution of another boot that never recorded its end", id)
		}
	}
	if _, err := os.Stat(filepath.Join(ledger, rc.ID+".json")); err != nil {
		t.Errorf("gc removed this boot's newest record %s: %v", rc.ID, err)
	}
}

// A connection the sidecar refuses (a worker's: an unsandboxed one in the cgroup hlaunch made it) is not
// reported every time: at two log lines and a refused event each, a worker that connects in a loop would
// fill the event ring (4,096), so that the gateway, reconnecting with ?since=, would lose the exit of a
// worker it had not read yet, and its live stream fall behind and be dropped. Refusals are reported at most
// about ten a second (a burst of 20 first), the next report saying how many were not; the metric still
// counts each. 5,000 connections neither evict the exited event nor write 10,000 lines.
func TestRedteam4RefusedPeerFloodsEvents(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	sockDir := scSocketDir(t)
	must(t, os.Chmod(sockDir, 0o755))
	sock := filepath.Join(sockDir, "s.sock")
	// B's worker runs as B's owner: the socket's group lets it connect, so that the sidecar's own refusal
	// of a worker peer is what it floods.
	p := startSidecarProc(t, e, sock, "--socket-group", strconv.Itoa(profileUID("b")))
	var rc receipt
	p.mustDo("POST", "/v1/workers", scSpec("b", "true"), 201, &rc)
	p.mustDo("GET", "/v1/workers/"+rc.ID+"/wait?timeout=60s", "", 200, nil)
	// The exit is published by the watcher: wait for the event itself, as a gateway would read it.
	exitedIn := func(timeout time.Duration) (bool, int) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://sidecar/v1/events?since=0", nil)
		resp, err := p.client.Do(req)
		must(t, err)
		defer resp.Body.Close()
		refused := 0
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev scEvent
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			if ev.Type == "exited" && ev.ID == rc.ID {
				return true, refused
			}
			if ev.Type == "refused" && ev.ID == "" {
				refused++
			}
		}
		return false, refused
	}
	if ok, _ := exitedIn(30 * time.Second); !ok {
		t.Fatalf("no exited event for %s within 30 s", rc.ID)
	}
	const n = 5000
	flood := `import socket,sys
for i in range(` + strconv.Itoa(n) + `):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.close()
`
	if r := e.run("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", e.Parent, "--", scPython(t), "-c", flood, sock); r.Code != 0 {
		t.Fatalf("the flooding worker: exit %d %s", r.Code, r.Stderr)
	}
	// Every refusal is counted, whether reported or not: refused by the peer check, or turned away by a
	// connection limit first (the flood runs past its uid's share).
	deadline := time.Now().Add(30 * time.Second)
	var refused float64
	for time.Now().Before(deadline) {
		_, m := p.do("GET", "/v1/metrics", "")
		refused = 0
		for _, line := range strings.Split(string(m), "\n") {
			if v, ok := strings.CutPrefix(line, "hlaunch_sidecar_refused_connections_total "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				refused += f
			}
			if strings.HasPrefix(line, "hlaunch_sidecar_limited_total{") {
				f, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
				refused += f
			}
		}
		if refused >= n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if refused < n {
		t.Errorf("the metric counts %v refused connections of %d", refused, n)
	}
	found, refusedEvents := exitedIn(3 * time.Second)
	if !found {
		t.Errorf("after %d refused connections the replay (?since=0) no longer holds %s's exited event (%d refused events in it)", n, rc.ID, refusedEvents)
	}
	lines := strings.Count(p.log.String(), "connection refused") + strings.Count(p.log.String(), "refused connection from")
	if lines > 400 || !strings.Contains(p.log.String(), "not reported") {
		t.Errorf("%d refused connections wrote %d log lines; want them bounded, and a line saying how many were not reported", n, lines)
	}
}
