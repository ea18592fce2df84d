package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is `hlaunch version --json`'s answer, read from the build information the Go toolchain
// embeds (module version and VCS stamp), so no version string has to be kept in sync by hand.
type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hlaunch's version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := buildVersion()
			if a.json {
				return printJSON(a.stdout, v)
			}
			s := "hlaunch " + v.Version
			if v.Revision != "" {
				s += " (" + v.Revision
				if v.Modified {
					s += ", modified"
				}
				s += ")"
			}
			_, err := fmt.Fprintf(a.stdout, "%s %s\n", s, v.Go)
			return err
		},
	}
}

// buildVersion reads the embedded build information.
func buildVersion() versionInfo {
	v := versionInfo{Version: "(devel)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
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
