package launcher_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Environ composes what a worker of B would get, with provenance, starting nothing; DecodeSpec is strict.
func TestEnvironAndDecodeSpec(t *testing.T) {
	w := newWorld(t, worker.ScopeNone, nil)
	env, err := w.l.Environ(context.Background(), worker.Spec{Profile: "b", Argv: []string{"x"}, Env: map[string]string{"K": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	src := map[string]string{}
	for _, e := range env {
		src[e.Name] = e.Source
	}
	if !strings.HasPrefix(src["B_MARKER"], "profile:") || src["K"] != "flag" || src["A_MARKER"] != "" {
		t.Errorf("environ provenance: %v", src)
	}
	if _, err := w.l.Environ(context.Background(), worker.Spec{Profile: "../a", Argv: []string{"x"}}); !errors.Is(err, worker.ErrInvalid) {
		t.Errorf("a profile name with ..: %v", err)
	}
	if s, err := worker.DecodeSpec([]byte(`{"profile":"b","argv":["true"],"sandbox":true}`)); err != nil || s.Profile != "b" || !s.Sandbox {
		t.Errorf("decode: %+v, %v", s, err)
	}
	for _, bad := range []string{`{"Profile":"c"}`, `{"profile":"b","profile":"c"}`, `{"profile":"b"} x`, `{"nope":1}`} {
		if _, err := worker.DecodeSpec([]byte(bad)); !errors.Is(err, worker.ErrInvalid) || strings.Contains(err.Error(), "\n") {
			t.Errorf("decode %s: %v, want one line wrapping ErrInvalid", bad, err)
		}
	}
}

// New refuses what it cannot use, naming it: a relative state directory, a policy file that is not there.
func TestNewRefusesBadConfig(t *testing.T) {
	root := t.TempDir()
	for what, cfg := range map[string]launcher.Config{
		"--state-dir": {Root: root, StateDir: "relative/state"},
		"policy":      {Root: root, StateDir: t.TempDir(), PolicyFile: filepath.Join(root, "missing.json")},
	} {
		if _, err := launcher.New(cfg); !errors.Is(err, worker.ErrInvalid) || !strings.Contains(err.Error(), what) {
			t.Errorf("%s: %v", what, err)
		}
	}
	l, err := launcher.New(launcher.Config{Root: root, StateDir: filepath.Join(t.TempDir(), "s")})
	if err != nil {
		t.Fatal(err)
	}
	if l.Root() != root || !strings.HasSuffix(l.StateDir(), "/s") || l.WorkersDir() != l.StateDir()+"/workers" {
		t.Errorf("root %q, state %q, workers %q", l.Root(), l.StateDir(), l.WorkersDir())
	}
}

// The state and ledger directories travel to every shim as JSON strings: other bytes are refused up front.
func TestNewRefusesDirsThatAreNotUTF8(t *testing.T) {
	root := t.TempDir()
	for flag, cfg := range map[string]launcher.Config{
		"--state-dir":  {Root: root, StateDir: "/tmp/s\xff"},
		"--ledger-dir": {Root: root, StateDir: t.TempDir(), LedgerDir: "/tmp/l\xff"},
	} {
		if _, err := launcher.New(cfg); !errors.Is(err, worker.ErrInvalid) || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s not UTF-8: %v, want ErrInvalid naming it", flag, err)
		}
	}
}
