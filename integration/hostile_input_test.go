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

// hermesNames reads nsenv/testdata/hermes_names.txt, the contract's lists by section.
func hermesNames(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../nsenv/testdata/hermes_names.txt")
	must(t, err)
	out := map[string][]string{}
	sect := ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			sect = strings.Trim(line, "[]")
		default:
			out[sect] = append(out[sect], strings.Fields(line)...)
		}
	}
	if len(out["tier1"]) < 22 || len(out["tier2"]) < 60 {
		t.Fatalf("hermes_names.txt holds %d Tier-1 and %d Tier-2 names", len(out["tier1"]), len(out["tier2"]))
	}
	return out
}

// TestHermesNamesInsideChild (issue 15 class 11): a profile's .env holds every name of hermes' lists
// (upper and lower case) and names whose Unicode upper-casing is a Tier-1 name; the child reports what
// reached it in every secrets mode. Tier 1 never arrives; Tier 2 arrives only with --secrets profile or
// by --pass; nothing of a name outside ASCII arrives.
func TestHermesNamesInsideChild(t *testing.T) {
	e := newEnv(t)
	names := hermesNames(t)
	tier1 := map[string]bool{}
	for _, n := range names["tier1"] {
		tier1[n] = true
	}
	var sb strings.Builder
	sb.WriteString("KEEP_MARKER=kept\n")
	var t1, t2 []string
	for _, n := range names["tier1"] {
		t1 = append(t1, n, strings.ToLower(n))
	}
	for _, n := range names["tier2"] {
		if !tier1[n] {
			t2 = append(t2, n, strings.ToLower(n))
		}
	}
	for _, n := range append(append([]string{}, t1...), t2...) {
		sb.WriteString(n + "=v-" + n + "\n")
	}
	unicodeT1 := []string{"\u017fudo_password", "HERMES_DASHBOARD_SE\u00dfION_TOKEN", "GH_TOKEN\u200b"}
	for _, n := range unicodeT1 {
		sb.WriteString(n + "=v-unicode\n")
	}
	e.profile("n", sb.String())

	for _, mode := range []string{"profile", "none", "none+pass"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"-p", "n", "--scope", "none", "--secrets", strings.TrimSuffix(mode, "+pass")}
			if mode == "none+pass" {
				args = append(args, "--pass", "OPENAI_API_KEY", "--pass", "llm_model")
			}
			rep, _ := e.with(t).report(args)
			if rep.Env["KEEP_MARKER"] != "kept" {
				t.Fatalf("the profile's plain entry is missing: %v", rep.Env)
			}
			for _, n := range t1 {
				if v, ok := rep.Env[n]; ok {
					t.Errorf("Tier-1 %s=%s reached the child", n, v)
				}
			}
			for _, n := range unicodeT1 {
				if _, ok := rep.Env[n]; ok {
					t.Errorf("%q (Tier 1 under hermes' str.upper) reached the child", n)
				}
			}
			for _, n := range t2 {
				_, ok := rep.Env[n]
				want := mode == "profile" || (mode == "none+pass" && (n == "OPENAI_API_KEY" || n == "llm_model"))
				if ok != want {
					t.Errorf("Tier-2 %s: in the child = %v, want %v", n, ok, want)
				}
			}
		})
	}
}

// TestDotenvNotUTF8IsRefused (class 11): a .env that is not UTF-8 is refused - one line naming the file
// and the byte offset, exit 125, nothing started - where the old launcher re-encoded it as latin-1 and
// let a re-encoded key through.
func TestDotenvNotUTF8IsRefused(t *testing.T) {
	e := newEnv(t)
	home := e.profile("l1", "OK=1\nX\xffY=latin1-key\n")
	marker := filepath.Join(t.TempDir(), "started")
	r := e.run("exec", "-p", "l1", "--scope", "none", "--", "touch", marker)
	want := filepath.Join(home, ".env") + ": not UTF-8 at byte 6"
	if lines := strings.Split(strings.TrimSpace(r.Stderr), "\n"); r.Code != 125 || len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Fatalf("exit %d, stderr %q; want 125 and one line holding %q", r.Code, r.Stderr, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran")
	}
	if r := e.run("env", "-p", "l1"); r.Code != 125 || !strings.Contains(r.Stderr, want) {
		t.Fatalf("env: exit %d, stderr %q", r.Code, r.Stderr)
	}
}
