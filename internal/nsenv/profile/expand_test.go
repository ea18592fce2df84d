package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// HERMES_HOME is expanded as hermes expands it, expanduser(expandvars(v)): the Go expansion gives what
// Python's posixpath gives for the same value and environment, over hand-picked edge cases.
func TestExpandHermesHomeMatchesPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 is required in CI for the differential expansion test: %v", err)
		}
		t.Skipf("no python3 to run the reference expansion: %v", err)
	}
	env := map[string]string{"HOME": "/home/h//", "DATA": "/srv/data", "N": "x", "A_1": "/a1", "BR": "b}r"}
	inputs := []string{
		"~/.hermes", "~", "~/", "~root/x", "~nosuchuser-hl/x", "/x/~/y", "$DATA/profiles/p", "${DATA}/h",
		"$MISSING/h", "${MISSING}/h", "$", "a$", "$$DATA", "${DATA", "${}", "$DATA$N", "$A_1/z", "$A_1x",
		"~/$N/${N}", "$HOME/.hermes", "${BR}", "pre${N}post", "$-x", "${N}${N}$N",
	}
	ref := `import json,os,posixpath,sys
env, ins = json.load(sys.stdin)
os.environ.clear(); os.environ.update(env)
print(json.dumps([posixpath.expanduser(posixpath.expandvars(s)) for s in ins]))`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in, _ := json.Marshal([]any{env, inputs})
	cmd := exec.CommandContext(ctx, py, "-c", ref)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var want []string
	if err := json.Unmarshal(out, &want); err != nil || len(want) != len(inputs) {
		t.Fatalf("python answered %q: %v", out, err)
	}
	getenv := func(k string) string { return env[k] }
	for i, s := range inputs {
		if got := expandHermesHome(s, getenv, "/unused"); got != want[i] {
			t.Errorf("expand %q = %q, python %q", s, got, want[i])
		}
	}
}

// ResolveRoot expands HERMES_HOME before it derives the root: ~ and $VAR mean what they mean to hermes,
// not a relative directory named "~" or "$VAR" under the working directory.
func TestResolveRootExpandsHermesHome(t *testing.T) {
	userHome := t.TempDir()
	native := filepath.Join(userHome, ".hermes")
	env := map[string]string{"HOME": userHome, "DATA": "/srv/data"}
	getenv := func(k string) string { return env[k] }
	for v, want := range map[string]string{
		"~/.hermes":                  native,
		"~/.hermes/profiles/coder":   native,
		"$HOME/.hermes/profiles/x":   native,
		"$DATA/profiles/coder":       "/srv/data",
		"${DATA}":                    "/srv/data",
		"/opt/$MISSING/profiles/abc": "/opt/$MISSING",
	} {
		env["HERMES_HOME"] = v
		if got, err := ResolveRoot("", getenv, userHome); err != nil || got != want {
			t.Errorf("HERMES_HOME=%s: root %q, %v; want %q", v, got, err, want)
		}
	}
}
