package profile

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// envMap turns an Environ into name -> value, failing on a repeated name or an unsorted list.
func envMap(t testing.TB, e Environ) map[string]string {
	t.Helper()
	m := make(map[string]string, len(e))
	for i, en := range e {
		if i > 0 && e[i-1].Name >= en.Name {
			t.Fatalf("environ not sorted/unique at %q after %q", en.Name, e[i-1].Name)
		}
		m[en.Name] = en.Value
	}
	return m
}

func TestComposeLayers(t *testing.T) {
	root := t.TempDir()
	b := mkProfile(t, root, "b", strings.Join([]string{
		"B_MARKER=b",
		"FIRECRAWL_API_KEY=b-fc",
		"GH_TOKEN=never",             // Tier 1
		"auxiliary_x_api_key=never",  // Tier 1 by pattern, lower case
		"TELEGRAM_ALLOWED_USERS=1,2", // B's own gate: fine
		"HERMES_HOME=/elsewhere",     // pinned: derived wins
		"PATH=/b/bin",                // B may set PATH
		"DUP=first", "DUP=second",    // later wins
		"OVERRIDE=from-env-file",
		"PASSME_TOKEN=p",
	}, "\n"))
	launcher := []string{
		"PATH=/usr/bin", "PATH=/shadow", "LANG=C.UTF-8", "LC_ALL=C", "LC_CTYPE=C", "TZ=UTC", "TERM=xterm",
		"USER=u", "LOGNAME=u", "SHELL=/bin/sh", "HOME=/home/u", "path=/lower", "LANGUAGE=en",
		"OPENAI_API_KEY=ambient", "HERMES_MODEL=a-model", "TERMINAL_ENV=docker", "HERMES_HOME=/a",
		"EDITOR=vim", "NOVALUE", "=weird",
	}
	env, err := Compose(Request{
		Profile:  b,
		Launcher: launcher,
		OSHome:   "/home/u",
		Env:      map[string]string{"OVERRIDE": "flag", "FLAG_ONLY": "x=y", "MY_API_KEY": "k"},
		Inherit:  []string{"EDITOR", "NOT_SET_ANYWHERE"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := envMap(t, env)
	scratch := filepath.Join(b.Home, "cache", "scratch")
	want := map[string]string{
		"PATH": "/b/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "LC_CTYPE": "C", "TZ": "UTC", "TERM": "xterm",
		"USER": "u", "LOGNAME": "u", "SHELL": "/bin/sh", "HOME": "/home/u",
		"HERMES_HOME": b.Home, "HERMES_PROFILE": "b", "TMPDIR": scratch, "TMP": scratch, "TEMP": scratch,
		"HERMES_REAL_HOME": "/home/u",
		"B_MARKER":         "b", "FIRECRAWL_API_KEY": "b-fc", "TELEGRAM_ALLOWED_USERS": "1,2", "DUP": "second",
		"OVERRIDE": "flag", "PASSME_TOKEN": "p", "FLAG_ONLY": "x=y", "MY_API_KEY": "k", "EDITOR": "vim",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("environ\n got %v\nwant %v", got, want)
	}
	sources := map[string]string{
		"LANG": "launcher", "EDITOR": "launcher", "HERMES_HOME": "derived", "TMP": "derived",
		"OVERRIDE": "flag", "PATH": "profile:" + b.EnvFile() + ":7", "DUP": "profile:" + b.EnvFile() + ":9",
	}
	for name, src := range sources {
		if e, _ := env.Lookup(name); e.Source != src {
			t.Errorf("%s: source %q, want %q", name, e.Source, src)
		}
	}
	for name, secret := range map[string]bool{"FIRECRAWL_API_KEY": true, "MY_API_KEY": true, "PASSME_TOKEN": true, "B_MARKER": false, "PATH": false} {
		if e, _ := env.Lookup(name); e.Secret != secret {
			t.Errorf("%s: Secret = %v, want %v", name, e.Secret, secret)
		}
	}
	strs := env.Strings()
	if len(strs) != len(want) || strs[0] != "B_MARKER=b" {
		t.Errorf("Strings() = %v", strs)
	}
}

func TestComposeSecretsNone(t *testing.T) {
	root := t.TempDir()
	b := mkProfile(t, root, "b", "B_MARKER=b\nOPENAI_API_KEY=b-oa\nFIRECRAWL_API_KEY=b-fc\nX_PASSWORD=pw\nGH_TOKEN=t1\nOPENAI_API_KEY=b-oa2\n")
	env, err := Compose(Request{Profile: b, Secrets: SecretsNone, Pass: []string{"OPENAI_API_KEY"}})
	if err != nil {
		t.Fatal(err)
	}
	got := envMap(t, env)
	if got["B_MARKER"] != "b" || got["OPENAI_API_KEY"] != "b-oa2" {
		t.Fatalf("got %v", got)
	}
	for _, n := range []string{"FIRECRAWL_API_KEY", "X_PASSWORD", "GH_TOKEN"} {
		if _, ok := got[n]; ok {
			t.Errorf("%s passed under --secrets none", n)
		}
	}
	if e, _ := env.Lookup("OPENAI_API_KEY"); e.Source != "profile:"+b.EnvFile()+":6" || !e.Secret {
		t.Errorf("passed entry: %+v", e)
	}
	if _, ok := got["HERMES_REAL_HOME"]; ok {
		t.Error("HERMES_REAL_HOME set without OSHome")
	}
}

func TestComposeRefusals(t *testing.T) {
	root := t.TempDir()
	b := mkProfile(t, root, "b", "B_MARKER=b\nGH_TOKEN=x\n")
	launcher := []string{"OPENAI_API_KEY=a", "TERMINAL_ENV=docker", "HERMES_MODEL=m", "TELEGRAM_ALLOWED_USERS=1", "GH_TOKEN=t"}
	tests := []struct {
		name string
		req  Request
		err  error
		msg  string
	}{
		{"inherit credential", Request{Inherit: []string{"OPENAI_API_KEY"}}, ErrRefusedInherit, "credential"},
		{"inherit credential-shaped lower case", Request{Inherit: []string{"openai_api_key"}}, ErrRefusedInherit, "credential"},
		{"inherit launch setting TERMINAL_", Request{Inherit: []string{"TERMINAL_ENV"}}, ErrRefusedInherit, "launch-profile setting"},
		{"inherit launch setting HERMES_", Request{Inherit: []string{"HERMES_MODEL"}}, ErrRefusedInherit, "launch-profile setting"},
		{"inherit HERMES_HOME", Request{Inherit: []string{"HERMES_HOME"}}, ErrRefusedInherit, "launch-profile setting"},
		{"inherit lower-case launch setting", Request{Inherit: []string{"hermes_model"}}, ErrRefusedInherit, "launch-profile"},
		{"inherit gate", Request{Inherit: []string{"TELEGRAM_ALLOWED_USERS"}}, ErrRefusedInherit, "profile gate"},
		{"inherit tier1", Request{Inherit: []string{"GH_TOKEN"}}, ErrRefusedInherit, "Tier-1"},
		{"inherit bad name", Request{Inherit: []string{"A=B"}}, ErrBadAssignment, "--inherit"},
		{"env tier1", Request{Env: map[string]string{"GITHUB_TOKEN": "x"}}, ErrRefusedName, `--env "GITHUB_TOKEN"`},
		{"env tier1 pattern lower", Request{Env: map[string]string{"_hermes_force_x": "1"}}, ErrRefusedName, "Tier-1"},
		{"env pinned", Request{Env: map[string]string{"HERMES_HOME": "/a"}}, ErrRefusedName, "--env HERMES_HOME"},
		{"env empty name", Request{Env: map[string]string{"": "x"}}, ErrBadAssignment, "--env"},
		{"env NUL value", Request{Env: map[string]string{"A": "x\x00y"}}, ErrBadAssignment, "--env"},
		{"pass tier1", Request{Secrets: SecretsNone, Pass: []string{"GH_TOKEN"}}, ErrRefusedName, `--pass "GH_TOKEN"`},
		// Names outside ASCII: hermes' str.upper() turns U+017F LONG S into 'S' and U+00DF into "SS", so
		// these are Tier-1 names to hermes; they never pass a flag.
		{"env long-s sudo_password", Request{Env: map[string]string{"\u017fudo_password": "x"}}, ErrRefusedName, "outside ASCII"},
		{"pass long-s", Request{Secrets: SecretsNone, Pass: []string{"\u017fUDO_PASSWORD"}}, ErrRefusedName, "outside ASCII"},
		{"inherit sharp s", Request{Inherit: []string{"HERMES_DASHBOARD_SE\u00dfION_TOKEN"}}, ErrRefusedInherit, "outside ASCII"},
		{"env escape in name", Request{Env: map[string]string{"A\x1b[2J": "x"}}, ErrBadAssignment, `\x1b[2J`},
		{"inherit DEL in name", Request{Inherit: []string{"A\x7f"}}, ErrBadAssignment, `\x7f`},
		{"pass missing", Request{Secrets: SecretsNone, Pass: []string{"NOPE_KEY"}}, ErrPassNotFound, b.EnvFile()},
		{"bad secrets mode", Request{Secrets: "all"}, ErrInvalidRequest, "--secrets"},
		{"no profile", Request{}, ErrInvalidRequest, "no profile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			if tt.name != "no profile" {
				req.Profile = b
			}
			req.Launcher = launcher
			env, err := Compose(req)
			if !errors.Is(err, tt.err) || env != nil {
				t.Fatalf("Compose = %v, %v; want nil, %v", env, err, tt.err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %q does not mention %q", err, tt.msg)
			}
		})
	}
}

func TestComposeBadDotenv(t *testing.T) {
	root := t.TempDir()
	nul := mkProfile(t, root, "nul", "A=1\nB=x\x00y\n")
	if _, err := Compose(Request{Profile: nul}); !errors.Is(err, ErrInvalidEntry) || !strings.Contains(err.Error(), nul.EnvFile()+":2") {
		t.Fatalf("NUL: %v", err)
	}
	esc := mkProfile(t, root, "esc", "")
	outside := filepath.Join(t.TempDir(), "x.env")
	if err := os.WriteFile(outside, []byte("A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, esc.EnvFile())
	if _, err := Compose(Request{Profile: esc}); !errors.Is(err, ErrSymlinkEscape) {
		t.Fatalf("escape: %v", err)
	}
}

func TestParseAssignment(t *testing.T) {
	tests := []struct {
		in, k, v string
		err      error
	}{
		{"A=1", "A", "1", nil},
		{"A=", "A", "", nil},
		{"A=b=c", "A", "b=c", nil},
		{"lower=x y", "lower", "x y", nil},
		{"A", "", "", ErrBadAssignment},
		{"=1", "", "", ErrBadAssignment},
		{"A B=1", "", "", ErrBadAssignment},
		{"A=x\x00", "", "", ErrBadAssignment},
	}
	for _, tt := range tests {
		k, v, err := ParseAssignment(tt.in)
		if k != tt.k || v != tt.v || !errors.Is(err, tt.err) {
			t.Errorf("ParseAssignment(%q) = %q, %q, %v", tt.in, k, v, err)
		}
		if err != nil && !strings.Contains(err.Error(), "--env") {
			t.Errorf("ParseAssignment(%q): error %q does not name --env", tt.in, err)
		}
	}
}

func TestEnvironHelpers(t *testing.T) {
	e := Environ{{Name: "B", Value: "1"}, {Name: "A", Value: "x"}, {Name: "B", Value: "2"}}
	if got := strings.Join(e.Strings(), " "); got != "A=x B=2" {
		t.Fatalf("Strings = %q", got)
	}
	if en, ok := e.Lookup("B"); !ok || en.Value != "2" {
		t.Fatalf("Lookup(B) = %+v %v", en, ok)
	}
	if _, ok := e.Lookup("b"); ok {
		t.Fatal("Lookup is exact")
	}
}

// TestComposeBaseNeverCopiesSecrets: a policy's base pattern that also matches credentials or gates
// copies only the global names from the launcher; its secrets stay behind (the contract: a credential
// that exists only in the launcher's environment never reaches a child).
func TestComposeBaseNeverCopiesSecrets(t *testing.T) {
	b := mkProfile(t, t.TempDir(), "b", "B_MARKER=b\n")
	pol := DefaultPolicy()
	pol.Base = append(pol.Base, "OPENAI_*", "SLACK_*")
	env, err := Compose(Request{Profile: b, Policy: pol, Launcher: []string{
		"OPENAI_API_KEY=ambient", "OPENAI_MODE=fast", "SLACK_ALLOWED_USERS=u", "SLACK_BOT_TOKEN=t", "SLACK_THEME=dark",
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range env {
		if e.Source == SourceLauncher {
			got[e.Name] = e.Value
		}
	}
	if want := map[string]string{"OPENAI_MODE": "fast", "SLACK_THEME": "dark"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("copied from the launcher: %v, want %v", got, want)
	}
}

// TestParseAssignmentErrorHidesValue: a malformed --env names the variable, never its value.
func TestParseAssignmentErrorHidesValue(t *testing.T) {
	for _, in := range []string{"BAD NAME=s3cret", "A\x1b=s3cret", "=s3cret"} {
		_, _, err := ParseAssignment(in)
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseAssignment(%q): %v", in, err)
		}
	}
}

// A .env of the launcher's own uid still may not set a loader name when someone else can write its home:
// a rename in the home replaces the file (with one root owns, for a root launcher: a log it made there).
func TestComposeHomeWriterLoaderNames(t *testing.T) {
	root := t.TempDir()
	b := mkProfile(t, root, "b", "PATH=/b/bin\n")
	compose := func() error { _, err := Compose(Request{Profile: b}); return err }
	if err := compose(); err != nil {
		t.Fatalf("the launcher's own home and .env: %v", err)
	}
	if err := os.Chmod(b.Home, 0o770); err != nil {
		t.Fatal(err)
	}
	if err := compose(); !errors.Is(err, ErrRefusedName) || !strings.Contains(err.Error(), "writable by its group or others (mode 0770)") {
		t.Fatalf("a group-writable home: %v; want ErrRefusedName naming its mode", err)
	}
	if err := os.Chmod(b.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 { // only root can hand the home to another uid
		if err := os.Chown(b.Home, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		if err := compose(); !errors.Is(err, ErrRefusedName) || !strings.Contains(err.Error(), "its home is owned by uid 12345") {
			t.Fatalf("a root-owned .env in uid 12345's home: %v; want ErrRefusedName naming the home's owner", err)
		}
	}
	if _, err := Compose(Request{Profile: b, Env: map[string]string{"PATH": "/flag"}}); err != nil {
		t.Fatalf("PATH given by --env: %v", err)
	}
}
