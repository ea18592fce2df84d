package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The real sidecar binary logs its life as structured lines (start, each spawn, refusal, exit, stop),
// reports its version, and serves /v1/metrics in the Prometheus text format with the counts of what it did.
func TestSidecarMetricsAndLog(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))

	var rc receipt
	p.mustDo("POST", "/v1/workers", scSpec("b", "/bin/sh", "-c", "exit 4"), 201, &rc)
	if st, b := p.do("POST", "/v1/workers", `{"profile":"nosuch","argv":["true"]}`); st != 400 {
		t.Fatalf("spawn for a missing profile: %d %s", st, b)
	}
	for _, ev := range p.events("?since=0", 2, 20*time.Second) {
		if ev.Type == "exited" && ev.ID != rc.ID {
			t.Fatalf("exited event for %s, want %s", ev.ID, rc.ID)
		}
	}
	var h struct{ Version, Status string }
	st, b := p.do("GET", "/v1/health", "")
	if err := json.Unmarshal(b, &h); st != 200 || err != nil || h.Version == "" {
		t.Fatalf("health: %d %s", st, b)
	}
	if r := e.run("version", "--json"); r.Code != 0 || !strings.Contains(r.Stdout, `"version": "`+h.Version+`"`) {
		t.Errorf("health version %q, hlaunch version --json %+v", h.Version, r)
	}

	st, b = p.do("GET", "/v1/metrics", "")
	metrics := string(b)
	if st != 200 {
		t.Fatalf("metrics: %d %s", st, b)
	}
	for series, want := range map[string]string{
		`hlaunch_sidecar_spawns_total{mode="cgroup"}`:             "1",
		`hlaunch_sidecar_spawn_errors_total{code="invalid"}`:      "1",
		`hlaunch_sidecar_spawn_duration_seconds_count`:            "1",
		`hlaunch_sidecar_events_total{type="exited"}`:             "1",
		`hlaunch_sidecar_workers_running`:                         "0",
		`hlaunch_sidecar_build_info{version="` + h.Version + `"}`: "1",
	} {
		if got := metricSample(metrics, series); got != want {
			t.Errorf("%s = %q, want %q", series, got, want)
		}
	}

	p.stop()
	log := p.log.String()
	for _, want := range []string{"level=INFO msg=started version=" + h.Version, "msg=spawn id=" + rc.ID,
		`msg="spawn refused" code=invalid profile=nosuch`, "msg=exited id=" + rc.ID, "exit_code=4", "msg=stopped"} {
		if !strings.Contains(log, want) {
			t.Errorf("sidecar log lacks %q:\n%s", want, log)
		}
	}
}

// A sidecar configured for a placement the host cannot make says so in its health from the start, not
// only after a spawn failed: here --scope systemd --user with no user manager to reach.
func TestSidecarHealthDegradedPlacement(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	empty := t.TempDir()
	must(t, os.Chmod(empty, 0o700))
	e.Launcher = append(append([]string(nil), e.Launcher...), "XDG_RUNTIME_DIR="+empty,
		"DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(empty, "nobus"))
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--scope", "systemd", "--user")
	var h struct {
		Status     string `json:"status"`
		SpawnError string `json:"spawn_error"`
	}
	p.mustDo("GET", "/v1/health", "", 200, &h)
	if h.Status != "degraded" || !strings.Contains(h.SpawnError, "--scope systemd: no user manager answers") {
		t.Fatalf("health %+v, want degraded naming --scope systemd and the user manager", h)
	}
	if !strings.Contains(p.log.String(), "degraded: --scope systemd") {
		t.Errorf("the start-up log does not say degraded:\n%s", p.log.String())
	}
}

// metricSample is the value of one sample line ("name{labels} value") of a Prometheus text page.
func metricSample(text, series string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// The sidecar words a refused spec with the spec's field names, not the exec flags, in the same sentence
// the CLI gives; nothing is started and no cgroup or log is made.
func TestSidecarSpecErrorsNameFields(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	// Profile c's home is root's: a sandboxed worker of it is refused with a hint that names user twice,
	// once in parentheses.
	cHome := e.profile("c", "C=1\n")
	must(t, exec.Command("chown", "-R", "0:0", cHome).Run())
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	logDir := filepath.Join(t.TempDir(), "logs")
	tests := []struct{ body, want string }{
		{`{"profile":"b","argv":["true"],"timeout":"10"}`, `spec field timeout "10": not a duration (want a duration such as 500ms, 30s or 10m)`},
		{`{"profile":"b","argv":["true"],"grace":"-1s"}`, `spec field grace "-1s": must not be negative`},
		{`{"profile":"b","argv":["true"],"user":"1000"}`, `spec field user "1000": want UID:GID`},
		{`{"profile":"b","argv":["true"],"user":"4294967296:4294967296"}`, `spec field user "4294967296:4294967296": uid "4294967296": out of range`},
		{`{"profile":"b","argv":["true"],"limits":{"cpus":0.001}}`, `spec field limits.cpus 0.001: below the minimum 0.01`},
		{`{"profile":"b","argv":["true"],"limits":{"cpu_weight":20000}}`, `spec field limits.cpu_weight 20000: want 1..10000`},
		{`{"profile":"b","argv":["true"],"scope":"vm"}`, `spec field scope "vm": want auto, systemd, cgroup or none`},
		{`{"profile":"b","argv":["true"],"cgroup_parent":"system.slice","log":"` + filepath.Join(logDir, "x.log") + `"}`, `spec field cgroup_parent "system.slice"`},
		{`{"profile":"b","argv":["true"],"pass":["X"]}`, `spec field pass only makes sense with secrets none`},
		{`{"profile":"b","argv":["true"],"user_manager":true,"scope":"cgroup","slice":"x.slice"}`, `spec field unit and slice need scope systemd or auto`},
		{`{"profile":"c","argv":["true"],"sandbox":true}`, `spec field sandbox: the profile home ` + cHome + ` is owned by root, and a sandboxed worker does not run as host root unless asked: pass user UID:GID (user 0:0 for root)`},
	}
	for _, tc := range tests {
		st, b := p.do("POST", "/v1/workers", tc.body)
		var eb struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(b, &eb); st != 400 || err != nil || eb.Error.Code != "invalid" {
			t.Errorf("%s: %d %s, want 400 invalid", tc.body, st, b)
			continue
		}
		if !strings.Contains(eb.Error.Message, tc.want) || strings.Contains(eb.Error.Message, "--") {
			t.Errorf("%s: %q, want %q and no flag", tc.body, eb.Error.Message, tc.want)
		}
	}
	if _, err := os.Lstat(logDir); err == nil {
		t.Errorf("a refused spawn created %s", logDir)
	}
	for _, h := range []string{"unified", "memory", "pids", "systemd"} {
		if _, err := os.Lstat(filepath.Join("/sys/fs/cgroup", h, "system.slice")); err == nil {
			t.Errorf("a refused spawn created the cgroup system.slice in %s", h)
		}
	}
	if recs := p.list(); len(recs) != 0 {
		t.Errorf("refused spawns left %d records", len(recs))
	}
}

// `hlaunch events` prints the sidecar's stream as NDJSON, one event a line, as it happens; without a
// sidecar on the socket it is one line naming --socket and exit 125.
func TestEventsCommand(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	sock := filepath.Join(scSocketDir(t), "s.sock")
	p := startSidecarProc(t, e, sock)
	cmd := exec.Command(hlaunchBin, "events", "--socket", sock, "--since", "0")
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var rc receipt
	p.mustDo("POST", "/v1/workers", scSpec("b", "/bin/sh", "-c", "exit 6"), 201, &rc)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var types []string
	deadline := time.After(30 * time.Second)
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the stream ended early; events of %s: %v", rc.ID, types)
			}
			var ev struct {
				Type, ID string
				ExitCode *int `json:"exit_code"`
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("not an NDJSON line: %q", l)
			}
			if ev.ID == rc.ID {
				types = append(types, ev.Type)
				done = ev.Type == "exited" && ev.ExitCode != nil && *ev.ExitCode == 6
			}
		case <-deadline:
			t.Fatalf("no exited event for %s within 30s: %v", rc.ID, types)
		}
	}
	if types[0] != "started" {
		t.Errorf("events of %s: %v, want started first", rc.ID, types)
	}
	r := e.run("events", "--socket", filepath.Join(scSocketDir(t), "none.sock"))
	if r.Code != 125 || !strings.Contains(r.Stderr, "--socket") || strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("events without a sidecar: %+v, want exit 125 and one line naming --socket", r)
	}
}
