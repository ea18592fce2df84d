package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileSpecs are launch specs shaped so that a proxy, the JSON Schema or a first-key-wins reader sees
// one launch (profile b, sandboxed, or nothing valid) while a lenient decoder runs another (profile c,
// unsandboxed). Each must be refused whole, by the CLI's --spec and by the sidecar alike (issue 15
// class 10). touch is the command: a refused spec never creates the marker.
func hostileSpecs(marker string) map[string]string {
	argv := `"argv":["touch",` + strconvQuote(marker) + `]`
	return map[string]string{
		"case variant key":   `{"profile":"b","Profile":"c",` + argv + `}`,
		"case variant only":  `{"PROFILE":"c",` + argv + `}`,
		"duplicate profile":  `{"profile":"b","profile":"c",` + argv + `}`,
		"duplicate sandbox":  `{"profile":"b","sandbox":true,"sandbox":false,` + argv + `}`,
		"duplicate argv":     `{"profile":"b","argv":["true"],` + argv + `}`,
		"nested duplicate":   `{"profile":"c","limits":{"pids":64,"pids":0},` + argv + `}`,
		"nested case key":    `{"profile":"c","limits":{"Pids":1},` + argv + `}`,
		"duplicate env name": `{"profile":"c","env":{"X":"1","X":"2"},` + argv + `}`,
		"trailing document":  `{"profile":"c",` + argv + `}{"profile":"b"}`,
		"trailing garbage":   `{"profile":"c",` + argv + `} x`,
		"invalid UTF-8":      "{\"profile\":\"c\",\"cwd\":\"/\xff\"," + argv + `}`,
		"lone surrogate":     `{"profile":"c","cwd":"/\ud800",` + argv + `}`,
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestHostileSpecCLI: `hlaunch exec --spec -` refuses every hostile spec with one line and exit 125,
// and starts nothing.
func TestHostileSpecCLI(t *testing.T) {
	e := newEnv(t)
	e.profile("c", "C_MARKER=c\n")
	marker := filepath.Join(t.TempDir(), "started")
	for name, body := range hostileSpecs(marker) {
		t.Run(name, func(t *testing.T) {
			r := e.with(t).runCtx(t.Context(), []byte(body), "exec", "--scope", "none", "--spec", "-")
			if r.Code != 125 {
				t.Fatalf("exit %d, want 125; stderr %q", r.Code, r.Stderr)
			}
			if lines := strings.Split(strings.TrimSpace(r.Stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "--spec") {
				t.Errorf("want one line naming --spec, got %q", r.Stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran")
			}
		})
	}
	// A huge spec is refused by size before it is decoded.
	huge := `{"profile":"b","argv":["true","` + strings.Repeat("x", 4<<20) + `"]}`
	if r := e.runCtx(t.Context(), []byte(huge), "exec", "--scope", "none", "--spec", "-"); r.Code != 125 || !strings.Contains(r.Stderr, "larger than") {
		t.Fatalf("huge spec: exit %d, stderr %q", r.Code, r.Stderr)
	}
	// The strict decoder still takes a well-formed spec.
	good := `{"profile":"b","argv":["touch",` + strconvQuote(marker) + `]}`
	if r := e.runCtx(t.Context(), []byte(good), "exec", "--scope", "none", "--spec", "-"); r.Code != 0 {
		t.Fatalf("good spec: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("good spec did not run: %v", err)
	}
}

// TestHostileSpecSidecar: a real sidecar answers every hostile spec with 400 "invalid" and starts
// nothing: no record, no process in its cgroup parent, no marker.
func TestHostileSpecSidecar(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	e := newEnv(t)
	e.profile("c", "C_MARKER=c\n")
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	marker := filepath.Join(t.TempDir(), "started")
	for name, body := range hostileSpecs(marker) {
		t.Run(name, func(t *testing.T) {
			st, b := p.do("POST", "/v1/workers", body)
			if st != 400 || scErrCode(b) != "invalid" {
				t.Fatalf("%d %s, want 400 invalid", st, b)
			}
		})
	}
	for name, body := range map[string]string{
		"signal case variant": `{"signal":"HUP","Signal":"KILL"}`,
		"signal duplicate":    `{"signal":"HUP","signal":"KILL"}`,
		"stop duplicate":      `{"grace":"1h","grace":"0s"}`,
	} {
		t.Run(name, func(t *testing.T) {
			// No such worker: the body is decoded (and refused) before the id is looked up.
			path := "/v1/workers/w-000000000000/signal"
			if strings.HasPrefix(name, "stop") {
				path = "/v1/workers/w-000000000000/stop"
			}
			st, b := p.do("POST", path, body)
			if st != 400 || scErrCode(b) != "invalid" {
				t.Fatalf("%d %s, want 400 invalid", st, b)
			}
		})
	}
	if recs := p.list(); len(recs) != 0 {
		t.Fatalf("hostile specs created %d records", len(recs))
	}
	if cgs := scCgroupsWithProcs(t, v2, e.Parent); len(cgs) != 0 {
		t.Fatalf("hostile specs started processes: %v", cgs)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a hostile spec ran its command")
	}
}
