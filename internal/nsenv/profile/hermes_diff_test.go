package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The rows of docs/hermes-contract.md's "Where hlaunch differs from hermes" that Compose decides.

// TMPDIR: the launcher's TMPDIR (in a gateway, the launch profile's scratch, which hermes' own
// apply_scratch_tmp_env set) is replaced by the target's scratch; a TMPDIR the target's .env or --env
// names is kept, as hermes keeps a temp dir the environment names (the launcher then checks that it is the
// worker's or root's: TestPrivilegeRootWorkerDirs, TestHermesDiffTMPDIRKeptAndChecked).
func TestHermesDiffTMPDIR(t *testing.T) {
	root := t.TempDir()
	a := filepath.Join(root, "profiles", "a", "cache", "scratch")
	launcher := []string{"TMPDIR=" + a, "TMP=" + a, "TEMP=" + a, "PATH=/usr/bin"}
	uid := uint32(os.Geteuid())

	b := mkProfile(t, root, "b", "B_MARKER=b\n")
	env, err := Compose(Request{Profile: b, Launcher: launcher, WorkerUID: uid})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"TMPDIR", "TMP", "TEMP"} {
		if e, _ := env.Lookup(n); e.Value != b.Scratch() || e.Source != SourceDerived {
			t.Errorf("launcher's %s=%s: child gets %+v, want the target's scratch %s", n, a, e, b.Scratch())
		}
	}

	c := mkProfile(t, root, "c", "TMPDIR=/srv/c-tmp\n")
	env, err = Compose(Request{Profile: c, Launcher: launcher, WorkerUID: uid, Env: map[string]string{"TMP": "/srv/flag-tmp"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"TMPDIR": "/srv/c-tmp", "TMP": "/srv/flag-tmp", "TEMP": c.Scratch()}
	for n, v := range want {
		if e, _ := env.Lookup(n); e.Value != v {
			t.Errorf("%s: child gets %q, want %q", n, e.Value, v)
		}
	}
}

// HERMES_HOME, HERMES_PROFILE and HERMES_REAL_HOME in a .env, in any case, never reach the child: the
// derived values win (hermes reads these from the process, not from a profile's secrets; a .env entry for
// one would point the child at another profile's home). --env refuses them outright.
func TestHermesDiffPinnedNames(t *testing.T) {
	root := t.TempDir()
	b := mkProfile(t, root, "b", strings.Join([]string{
		"HERMES_HOME=/elsewhere", "HERMES_PROFILE=a", "HERMES_REAL_HOME=/home/a",
		"hermes_home=/lower", "Hermes_Profile=mixed", "B_MARKER=b",
	}, "\n"))
	env, err := Compose(Request{Profile: b, OSHome: "/home/os", WorkerUID: uint32(os.Geteuid())})
	if err != nil {
		t.Fatal(err)
	}
	got := envMap(t, env)
	want := map[string]string{"HERMES_HOME": b.Home, "HERMES_PROFILE": "b", "HERMES_REAL_HOME": "/home/os", "B_MARKER": "b"}
	for n, v := range want {
		if got[n] != v {
			t.Errorf("%s = %q, want %q", n, got[n], v)
		}
	}
	for _, n := range []string{"hermes_home", "Hermes_Profile"} {
		if v, ok := got[n]; ok {
			t.Errorf("%s=%s from the .env reached the child", n, v)
		}
	}
	for _, n := range []string{"HERMES_HOME", "hermes_profile", "HERMES_REAL_HOME"} {
		if _, err := Compose(Request{Profile: b, Env: map[string]string{n: "/x"}}); err == nil {
			t.Errorf("--env %s=/x was accepted", n)
		}
	}
}

// Base names: hlaunch copies TERM, LOGNAME and every LC_* from the launcher besides hermes' global names
// (PATH HOME USER LANG LC_ALL TZ SHELL): they describe the terminal, the locale and the user of the
// process, never a profile. TMPDIR, which hermes lists as global, is not a base name (TestHermesDiffTMPDIR).
func TestHermesDiffBaseNames(t *testing.T) {
	b := mkProfile(t, t.TempDir(), "b", "")
	launcher := []string{"TERM=xterm-256color", "LOGNAME=gw", "LC_CTYPE=C.UTF-8", "LC_MESSAGES=C", "LC_ALL=C",
		"PATH=/usr/bin", "HOME=/home/gw", "USER=gw", "LANG=C.UTF-8", "TZ=UTC", "SHELL=/bin/sh", "TMPDIR=/tmp/gw"}
	env, err := Compose(Request{Profile: b, Launcher: launcher})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range launcher {
		n, v, _ := strings.Cut(kv, "=")
		e, _ := env.Lookup(n)
		if n == "TMPDIR" {
			if e.Source != SourceDerived {
				t.Errorf("TMPDIR came from %s", e.Source)
			}
			continue
		}
		if e.Value != v || e.Source != SourceLauncher {
			t.Errorf("base name %s: %+v, want %q from the launcher", n, e, v)
		}
	}
}

// --secrets none strips every credential of the target's .env and keeps its other names (B_MARKER, a
// TERMINAL_* setting): hermes' inherit_credentials=False passes none of the .env. The profile's settings
// are what makes its child its own; the credentials are what must not leak.
func TestHermesDiffSecretsNoneKeepsSettings(t *testing.T) {
	b := mkProfile(t, t.TempDir(), "b", "B_MARKER=b\nTERMINAL_ENV=local\nHERMES_MODEL=b-model\nFIRECRAWL_API_KEY=b-fc\nTELEGRAM_HOME_CHANNEL=42\nX_TOKEN=t\n")
	env, err := Compose(Request{Profile: b, Secrets: SecretsNone, WorkerUID: uint32(os.Geteuid())})
	if err != nil {
		t.Fatal(err)
	}
	got := envMap(t, env)
	for n, v := range map[string]string{"B_MARKER": "b", "TERMINAL_ENV": "local", "HERMES_MODEL": "b-model"} {
		if got[n] != v {
			t.Errorf("%s = %q, want %q (a setting, not a credential)", n, got[n], v)
		}
	}
	for _, n := range []string{"FIRECRAWL_API_KEY", "TELEGRAM_HOME_CHANNEL", "X_TOKEN"} {
		if _, ok := got[n]; ok {
			t.Errorf("credential %s passed under --secrets none", n)
		}
	}
}
