package version

import (
	"os"
	"regexp"
	"testing"
)

// The Python client reports the same version as the binaries (its __version__ is read by pip from
// hlaunch_client/_version.py).
func TestPythonVersionMatches(t *testing.T) {
	b, err := os.ReadFile("../../clients/python/hlaunch_client/_version.py")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^__version__ = "([^"]+)"$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("clients/python/hlaunch_client/_version.py has no __version__ line")
	}
	if string(m[1]) != Version {
		t.Errorf("Python client version %q, binaries %q: change both together", m[1], Version)
	}
}

func TestInfoString(t *testing.T) {
	v := Info{Version: "1.2.3", Revision: "0123456789ab", Modified: true, Go: "go1.26.0"}
	if got, want := v.String(), "hlaunch 1.2.3 (0123456789ab, modified) go1.26.0"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
