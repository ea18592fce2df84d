package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/hermestest"
)

// hostileSpecs are launch specs shaped so that a proxy, the JSON Schema or a first-key-wins reader sees
// one launch (profile b, sandboxed, or nothing valid) while a lenient decoder runs another (profile c,
// unsandboxed). Each must be refused whole, by the CLI's --spec and by the sidecar alike (class 10).
// touch is the command: a refused spec never creates the marker.
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
	// The worker runs as B's home's owner: the marker's directory is that owner's.
	markerDir := t.TempDir()
	must(t, os.Chown(markerDir, profileUID("b"), profileUID("b")))
	marker := filepath.Join(markerDir, "started")
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

// TestHermesNamesInsideChild (class 11): a profile's .env holds every name of hermes' lists
// (upper and lower case) and names whose Unicode upper-casing is a Tier-1 name; the child reports what
// reached it in every secrets mode. Tier 1 never arrives; Tier 2 arrives only with --secrets profile or
// by --pass; nothing of a name outside ASCII arrives.
func TestHermesNamesInsideChild(t *testing.T) {
	e := newEnv(t)
	tier1 := map[string]bool{}
	for _, n := range hermestest.Tier1() {
		tier1[n] = true
	}
	var sb strings.Builder
	sb.WriteString("KEEP_MARKER=kept\n")
	var t1, t2 []string
	for _, n := range hermestest.Tier1() {
		t1 = append(t1, n, strings.ToLower(n))
	}
	for _, n := range hermestest.Tier2() {
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

// exchanger swaps a and b with renameat2(RENAME_EXCHANGE) in a tight loop, as a worker racing its
// launcher would, until the returned stop is called; stop returns how many swaps were made.
func exchanger(t *testing.T, a, b string) (stop func() int) {
	t.Helper()
	done, finished := make(chan struct{}), make(chan struct{})
	var n atomic.Int64
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("renameat2(%s, %s, RENAME_EXCHANGE): %v", a, b, err)
				return
			}
			n.Add(1)
		}
	}()
	return func() int { close(done); <-finished; return int(n.Load()) }
}

// raceLaunches runs launch up to 100 times (at most 5 s) while swap races it; launch reports whether the
// attacker won that launch. The test fails if the attacker wins once.
func raceLaunches(t *testing.T, a, b string, launch func() (won bool, ran bool)) {
	t.Helper()
	stop := exchanger(t, a, b)
	deadline := time.Now().Add(5 * time.Second)
	tries, ran, wins := 0, 0, 0
	for ; tries < 100 && time.Now().Before(deadline); tries++ {
		w, r := launch()
		if w {
			wins++
		}
		if r {
			ran++
		}
	}
	swaps := stop()
	t.Logf("%d launches (%d ran), %d swaps, attacker won %d", tries, ran, swaps, wins)
	if swaps == 0 {
		t.Fatal("the attacker never swapped: the race was not run")
	}
	if wins > 0 {
		t.Fatalf("the attacker won %d of %d launches", wins, tries)
	}
}

// childEnvOf runs the child reporter for profile p and returns its environ, or nil when hlaunch refused
// (exit 125: a refusal is a defence, not a failure).
func childEnvOf(t *testing.T, e *env, args ...string) map[string]string {
	t.Helper()
	full := append([]string{"exec"}, args...)
	full = append(full, "--scope", "none", "--", selfBin, "child", "report")
	r := e.run(full...)
	if r.Code == 125 {
		return nil
	}
	// The worker runs as B's home's owner and starts in B's home: when the test's swap lands between the
	// launcher's checks and the child's chdir, the home's path leads to C's, which B's owner may not enter
	// (the kernel refuses the chdir, reported with the exec). Refused, as a 125 is.
	if r.Code == 126 && strings.Contains(r.Stderr, "permission denied") {
		return nil
	}
	if r.Code != 0 {
		t.Fatalf("hlaunch %v: exit %d: %s", full, r.Code, r.Stderr)
	}
	var rep childReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("child report: %v\n%s", err, r.Stdout)
	}
	return rep.Env
}

// TestHostileProfileSwap (class 5): while B's home is swapped with a symbolic link to C's home,
// B's launches either run with B's .env or are refused; C's marker never reaches B's child.
func TestHostileProfileSwap(t *testing.T) {
	e := newEnv(t)
	e.profile("c", "C_MARKER=c-secret\n")
	profiles := filepath.Join(e.Root, "profiles")
	must(t, os.Symlink("c", filepath.Join(profiles, "b-evil")))
	raceLaunches(t, filepath.Join(profiles, "b"), filepath.Join(profiles, "b-evil"), func() (bool, bool) {
		env := childEnvOf(t, e, "-p", "b")
		if env == nil {
			return false, false
		}
		if env["C_MARKER"] != "" {
			return true, true
		}
		if env["B_MARKER"] != "b" {
			t.Errorf("B's child without B's marker: %v", env)
		}
		return false, true
	})
}

// TestHostileDotenvSwap (class 5): a worker inside its own home swaps its .env with a link to C's .env,
// or swaps a directory its .env link passes through with a link to C's home.
func TestHostileDotenvSwap(t *testing.T) {
	e := newEnv(t)
	e.profile("c", "C_MARKER=c-secret\n")
	won := func(args ...string) func() (bool, bool) {
		return func() (bool, bool) {
			env := childEnvOf(t, e, args...)
			return env != nil && env["C_MARKER"] != "", env != nil
		}
	}
	t.Run("env and a link to C's env", func(t *testing.T) {
		home := e.profile("b1", "B_MARKER=b\n")
		must(t, os.Symlink("../c/.env", filepath.Join(home, ".env-evil")))
		raceLaunches(t, filepath.Join(home, ".env"), filepath.Join(home, ".env-evil"), won("-p", "b1"))
	})
	t.Run("a directory the env link passes through", func(t *testing.T) {
		home := e.profile("b2", "")
		must(t, os.MkdirAll(filepath.Join(home, "sub"), 0o700))
		must(t, os.WriteFile(filepath.Join(home, "sub", ".env"), []byte("B_MARKER=b\n"), 0o600))
		must(t, os.Remove(filepath.Join(home, ".env")))
		must(t, os.Symlink("sub/.env", filepath.Join(home, ".env")))
		must(t, os.Symlink("../c", filepath.Join(home, "sub-evil")))
		raceLaunches(t, filepath.Join(home, "sub"), filepath.Join(home, "sub-evil"), won("-p", "b2"))
	})
}

// TestHostileLogSwap (class 5): a worker swaps the directory of its --log with a link to a directory it
// wants a file created in (the test's own stand-in for /etc). No file is ever created there, and a .env
// that is a FIFO or a device is refused without hanging.
func TestHostileLogSwap(t *testing.T) {
	e := newEnv(t)
	base := t.TempDir()
	victim := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(base, "logs"), 0o700))
	must(t, os.Symlink(victim, filepath.Join(base, "logs-evil")))
	logPath := filepath.Join(base, "logs", "w.log")
	raceLaunches(t, filepath.Join(base, "logs"), filepath.Join(base, "logs-evil"), func() (bool, bool) {
		r := e.run("exec", "-p", "b", "--scope", "none", "--log", logPath, "--log-max", "64", "--", "echo", "x")
		ents, err := os.ReadDir(victim)
		must(t, err)
		return len(ents) > 0, r.Code == 0
	})
}

// TestHostileDotenvKinds (class 5): a .env that is a symbolic link (even to a file inside the home), a
// FIFO, a device or huge is refused - exit 125, one line naming the file, nothing started - and a FIFO
// does not hang the launch.
func TestHostileDotenvKinds(t *testing.T) {
	e := newEnv(t)
	kinds := map[string]func(env string){
		"link inside the home": func(env string) {
			must(t, os.WriteFile(env+"-real", []byte("X=1\n"), 0o600))
			must(t, os.Symlink(".env-real", env))
		},
		"fifo": func(env string) { must(t, unix.Mkfifo(env, 0o600)) },
		"huge": func(env string) {
			must(t, os.WriteFile(env, nil, 0o600))
			must(t, os.Truncate(env, 17<<20))
		},
	}
	if os.Geteuid() == 0 {
		kinds["device"] = func(env string) { must(t, unix.Mknod(env, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 5)))) }
	}
	i := 0
	for name, plant := range kinds {
		i++
		t.Run(name, func(t *testing.T) {
			prof := "k" + string(rune('a'+i))
			marker := filepath.Join(t.TempDir(), "started")
			home := e.with(t).profile(prof, "")
			env := filepath.Join(home, ".env")
			must(t, os.Remove(env))
			plant(env)
			r := e.with(t).run("exec", "-p", prof, "--scope", "none", "--", "touch", marker)
			if lines := strings.Split(strings.TrimSpace(r.Stderr), "\n"); r.Code != 125 || len(lines) != 1 || !strings.Contains(lines[0], env) {
				t.Fatalf("exit %d, stderr %q; want 125 and one line naming %s", r.Code, r.Stderr, env)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran")
			}
		})
	}
}

// TestHostileOutputIsEscaped (class 12, what hlaunch prints): escape sequences a worker planted
// in its profile's .env or in an argv reach the caller's terminal as text, never as control; credentials
// are redacted in `env --explain`, in receipts and in `status`; --json output keeps '<' and '&' as
// written.
func TestHostileOutputIsEscaped(t *testing.T) {
	e := newEnv(t)
	osc := "\x1b]0;pwned\a\x1b[2J\u009b31m\u202e"
	e.profile("p", "TITLE="+osc+"\nK\x1b[8m=hidden\nOPENAI_API_KEY=sk-live-1\nHTML=<a&b>\n")
	noControl := func(what, out string) {
		t.Helper()
		for _, bad := range []string{"\x1b", "\a", "\u009b", "\u202e"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s printed %q raw: %q", what, bad, out)
			}
		}
	}
	r := e.run("env", "-p", "p", "--explain")
	if r.Code != 0 {
		t.Fatalf("env: exit %d: %s", r.Code, r.Stderr)
	}
	noControl("env --explain", r.Stdout)
	if !strings.Contains(r.Stdout, `\x1b]0;pwned\a`) || strings.Contains(r.Stdout, "sk-live-1") || !strings.Contains(r.Stdout, "OPENAI_API_KEY=***") {
		t.Errorf("env --explain: escaped title, redacted key expected:\n%s", r.Stdout)
	}
	noControl("env", e.run("env", "-p", "p").Stdout)
	if j := e.run("env", "-p", "p", "--json").Stdout; !strings.Contains(j, "<a&b>") || strings.Contains(j, "sk-live-1") {
		t.Errorf("env --json: want <a&b> as written and the key redacted: %s", j)
	}

	rc := e.detach([]string{"--scope", "none"}, "true", osc, "--token", "tok-live-2", "Authorization: Bearer sk-live-3")
	st := e.run("status", rc.ID)
	noControl("status", st.Stdout)
	for _, s := range []string{"tok-live-2", "sk-live-3"} {
		if strings.Contains(st.Stdout, s) || strings.Contains(e.run("status", "--json", rc.ID).Stdout, s) {
			t.Errorf("status shows the credential %s: %s", s, st.Stdout)
		}
	}
	noControl("ps", e.run("ps").Stdout)

	bad := e.run("status", "w-"+osc)
	noControl("an error", bad.Stderr)
	if bad.Code != 125 || len(strings.Split(strings.TrimSpace(bad.Stderr), "\n")) != 1 {
		t.Errorf("status of a hostile id: exit %d, %q", bad.Code, bad.Stderr)
	}
}

// TestHostileSandboxHomeSwap (class 5, the view side): while B's and C's homes are swapped by name, a
// sandboxed child's environ and its view always come from the same directory - never B's .env with C's
// files or C's .env with B's files. The view checks the home it mounts is the one whose .env was read.
func TestHostileSandboxHomeSwap(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	cHome := e.profile("c", "C_MARKER=c-secret\n")
	must(t, os.WriteFile(filepath.Join(cHome, "c-only"), nil, 0o644))
	must(t, os.Chown(filepath.Join(cHome, "c-only"), profileUID("c"), profileUID("c")))
	bHome := filepath.Join(e.Root, "profiles", "b")
	raceLaunches(t, bHome, cHome, func() (bool, bool) {
		args := []string{"exec", "-p", "b", "--sandbox", "--scope", "none", "--", selfBin, "child", "report", "ls:" + bHome}
		r := e.run(args...)
		if r.Code != 0 {
			return false, false // refused (or the swap made the home unusable for this launch)
		}
		var rep childReport
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Fatalf("child report: %v\n%s", err, r.Stdout)
		}
		viewIsC := strings.Contains(rep.Checks["ls:"+bHome], "c-only")
		envIsC := rep.Env["C_MARKER"] != ""
		if !viewIsC && !strings.HasPrefix(rep.Checks["ls:"+bHome], "ok") {
			t.Errorf("the child cannot list its own home: %s", rep.Checks["ls:"+bHome])
		}
		return viewIsC != envIsC, true
	})
}
