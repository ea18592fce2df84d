package main

import (
	"encoding/json"
	"github.com/hlaunch/hlaunch/internal/testutil"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/launcher"
)

// TestMain lets the test binary stand in for hlaunch: the launcher re-executes /proc/self/exe for its
// hidden roles (the init stub, the shim), and those must run before any test does.
func TestMain(m *testing.M) {
	if launcher.MaybeRunInternal() {
		return
	}
	if os.Getenv(relayChildEnv) != "" {
		relayChild()
		os.Exit(3) // release must not return after re-raising SIGTERM
	}
	os.Exit(testutil.RunWithLeakCheck(m))
}

// demoRoot makes a hermes root with profile b (B_MARKER=b) in a temporary directory.
func demoRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "profiles", "b")
	if err := os.MkdirAll(filepath.Join(home, "cache", "scratch"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".env"), []byte("B_MARKER=b\nGH_TOKEN=tier1\nFIRECRAWL_API_KEY=b-fc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return root
}

// These run real children with --scope none: no cgroup is created, nothing outlives the test.
func TestExecForeground(t *testing.T) {
	root := demoRoot(t)
	base := []string{"--root", root, "--state-dir", t.TempDir(), "exec", "-p", "b", "--scope", "none", "--"}

	t.Run("exit code passes through", func(t *testing.T) {
		code, _, stderr := runCLI(t, "", append(base, "sh", "-c", "exit 7")...)
		if code != 7 || stderr != "" {
			t.Errorf("exit %d, stderr %q; want 7 and nothing", code, stderr)
		}
	})
	t.Run("killed by a signal is 128+N", func(t *testing.T) {
		code, _, _ := runCLI(t, "", append(base, "sh", "-c", "kill -TERM $$")...)
		if code != 128+15 {
			t.Errorf("exit %d, want 143", code)
		}
	})
	t.Run("not found is 127 with one line", func(t *testing.T) {
		code, _, stderr := runCLI(t, "", append(base, "hlaunch-no-such-command")...)
		if code != 127 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "hlaunch: ") {
			t.Errorf("exit %d, stderr %q; want 127 and one line", code, stderr)
		}
	})
	t.Run("stdio are the same files and the environment is the profile's", func(t *testing.T) {
		t.Setenv("A_MARKER", "a")
		t.Setenv("OPENAI_API_KEY", "ambient")
		code, stdout, _ := runCLI(t, "from-stdin\n", append(base, "sh", "-c",
			`read line; echo "in=$line"; echo "B_MARKER=$B_MARKER A_MARKER=$A_MARKER OPENAI=$OPENAI_API_KEY GH=$GH_TOKEN"; readlink /proc/self/fd/1`)...)
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) != 3 {
			t.Fatalf("stdout %q", stdout)
		}
		if lines[0] != "in=from-stdin" {
			t.Errorf("stdin not passed: %q", lines[0])
		}
		if lines[1] != "B_MARKER=b A_MARKER= OPENAI= GH=" {
			t.Errorf("child environment: %q", lines[1])
		}
		if !strings.HasSuffix(lines[2], "/stdout") {
			t.Errorf("child's fd 1 is %q, not hlaunch's stdout file", lines[2])
		}
	})
}

func TestEnvCommand(t *testing.T) {
	root := demoRoot(t)
	t.Setenv("A_MARKER", "a")
	code, stdout, stderr := runCLI(t, "", "--root", root, "env", "-p", "b")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"B_MARKER=b\n", "FIRECRAWL_API_KEY=***\n", "HERMES_PROFILE=b\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("env output lacks %q:\n%s", want, stdout)
		}
	}
	for _, never := range []string{"A_MARKER", "GH_TOKEN", "b-fc"} {
		if strings.Contains(stdout, never) {
			t.Errorf("env output shows %s:\n%s", never, stdout)
		}
	}

	_, stdout, _ = runCLI(t, "", "--root", root, "env", "-p", "b", "--show-secrets", "--explain")
	if !strings.Contains(stdout, "FIRECRAWL_API_KEY=b-fc") || !strings.Contains(stdout, "profile:") {
		t.Errorf("--show-secrets --explain:\n%s", stdout)
	}

	_, stdout, _ = runCLI(t, "", "--root", root, "--json", "env", "-p", "b")
	var entries []envEntry
	if err := json.Unmarshal([]byte(stdout), &entries); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	for _, e := range entries {
		if e.Name == "FIRECRAWL_API_KEY" && (e.Value != "***" || !e.Secret || !strings.HasPrefix(e.Source, "profile:")) {
			t.Errorf("--json entry %+v", e)
		}
	}
}
