// Package version is hlaunch's release version, the one number the hlaunch and hlaunch-sidecar binaries,
// the sidecar's /v1/health and the Python client's __version__ all report. It is a constant in the source,
// not a linker flag, so that `go install ./cmd/...` and `make build` give the same answer; a test keeps the
// Python package's copy equal to it.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the release version (semantic versioning). Change it here and in
// clients/python/hlaunch_client/_version.py together; TestPythonVersionMatches fails otherwise.
const Version = "0.5.0"

// Info is what `hlaunch version --json` and the sidecar's health answer report about the build.
type Info struct {
	Version  string `json:"version"`            // Version
	Revision string `json:"revision,omitempty"` // the VCS revision the binary was built from, 12 hex digits, when stamped
	Time     string `json:"time,omitempty"`     // the revision's commit time, when stamped
	Modified bool   `json:"modified,omitempty"` // the work tree had uncommitted changes
	Go       string `json:"go"`                 // the Go toolchain that built the binary
}

// Read returns the version and what the Go toolchain embedded about the build (the VCS stamp when the
// build had one: -buildvcs).
func Read() Info {
	v := Info{Version: Version, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
			if len(v.Revision) > 12 {
				v.Revision = v.Revision[:12]
			}
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one-line form: "hlaunch 0.5.0 (0123456789ab, modified) go1.26.0".
func (v Info) String() string {
	s := "hlaunch " + v.Version
	if v.Revision != "" {
		s += " (" + v.Revision
		if v.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s + " " + v.Go
}
