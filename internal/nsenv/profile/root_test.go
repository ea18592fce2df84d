package profile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestResolveRoot(t *testing.T) {
	userHome := t.TempDir()
	native := filepath.Join(userHome, ".hermes")
	if err := os.MkdirAll(filepath.Join(native, "profiles", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A link pointing into ~/.hermes: hermes resolves HERMES_HOME, so this still means ~/.hermes.
	linked := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Join(native, "profiles", "x"), linked); err != nil {
		t.Fatal(err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		flag     string
		env      map[string]string
		userHome string
		want     string
		err      error
	}{
		{"flag wins", "/srv/h//", map[string]string{"HLAUNCH_ROOT": "/x", "HERMES_HOME": "/y"}, userHome, "/srv/h", nil},
		{"relative flag made absolute", "rel/root", nil, userHome, filepath.Join(cwd, "rel/root"), nil},
		{"HLAUNCH_ROOT next", "", map[string]string{"HLAUNCH_ROOT": "/srv/r/", "HERMES_HOME": "/y"}, userHome, "/srv/r", nil},
		{"HERMES_HOME profile-shaped", "", map[string]string{"HERMES_HOME": "/opt/data/profiles/coder"}, userHome, "/opt/data", nil},
		{"HERMES_HOME profile-shaped, trailing slash", "", map[string]string{"HERMES_HOME": "/opt/data/profiles/coder/"}, userHome, "/opt/data", nil},
		{"HERMES_HOME custom root", "", map[string]string{"HERMES_HOME": "/opt/data"}, userHome, "/opt/data", nil},
		{"HERMES_HOME stripped", "", map[string]string{"HERMES_HOME": "  /opt/data \n"}, userHome, "/opt/data", nil},
		{"HERMES_HOME under ~/.hermes", "", map[string]string{"HERMES_HOME": filepath.Join(native, "profiles", "x")}, userHome, native, nil},
		{"HERMES_HOME is ~/.hermes", "", map[string]string{"HERMES_HOME": native}, userHome, native, nil},
		{"HERMES_HOME deep under ~/.hermes", "", map[string]string{"HERMES_HOME": filepath.Join(native, "a", "b")}, userHome, native, nil},
		{"HERMES_HOME links into ~/.hermes", "", map[string]string{"HERMES_HOME": linked}, userHome, native, nil},
		{"HERMES_HOME blank ignored", "", map[string]string{"HERMES_HOME": "   "}, userHome, native, nil},
		{"default ~/.hermes", "", nil, userHome, native, nil},
		{"nil getenv", "", nil, userHome, native, nil},
		{"nothing at all", "", nil, "", "", ErrNoRoot},
		{"HERMES_HOME without user home", "", map[string]string{"HERMES_HOME": "/opt/data/profiles/c"}, "", "/opt/data", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			if tt.name == "nil getenv" {
				getenv = nil
			}
			got, err := ResolveRoot(tt.flag, getenv, tt.userHome)
			if !errors.Is(err, tt.err) || got != tt.want {
				t.Fatalf("ResolveRoot = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
		})
	}
}
