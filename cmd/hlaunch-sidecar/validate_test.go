package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/launcher"
)

// The sidecar's default placement is checked by the launcher's one scope check: the same sentence as
// `hlaunch exec --scope` and a spec's scope field, behind the sidecar's lead, exit 125, before anything is
// made (the socket's directory does not even exist).
func TestSidecarScopeCheckedByTheLauncher(t *testing.T) {
	for _, v := range []string{"bogus", "AUTO", "vm"} {
		cmd := newSidecarCmd()
		cmd.SetArgs([]string{"--socket", t.TempDir() + "/missing/s.sock", "--scope", v})
		err := cmd.Execute()
		if !errors.Is(err, launcher.ErrInvalid) {
			t.Fatalf("--scope %q: %v, want ErrInvalid", v, err)
		}
		spec := launcher.Spec{Profile: "b", Argv: []string{"true"}, Scope: launcher.Scope(v)}
		verr := spec.Validate()
		if verr == nil {
			t.Fatalf("Spec.Validate accepted scope %q", v)
		}
		sentence := strings.TrimPrefix(verr.Error(), launcher.ErrInvalid.Error()+": ")
		if want := launcher.ErrInvalid.Error() + ": sidecar: " + sentence; err.Error() != want {
			t.Errorf("--scope %q:\n got  %q\n want %q", v, err, want)
		}
	}
	for _, v := range []launcher.Scope{"", launcher.ScopeAuto, launcher.ScopeSystemd, launcher.ScopeCgroup, launcher.ScopeNone} {
		if err := launcher.CheckScope(string(v)); err != nil {
			t.Errorf("CheckScope(%q) = %v", v, err)
		}
	}
}
