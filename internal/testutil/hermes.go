package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// HermesRoot makes a hermes root in a temporary directory, removed after the test: for each entry of
// profiles, profiles/<name> with that text as its .env (mode 0600), and for the name "default" the root's
// own .env. It returns the root's path.
func HermesRoot(t testing.TB, profiles map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "hermes")
	if err := os.MkdirAll(filepath.Join(root, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, env := range profiles {
		home := root
		if name != "default" {
			home = filepath.Join(root, "profiles", name)
		}
		if err := os.MkdirAll(home, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".env"), []byte(env), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
