package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
)

// envEntry is one variable in `hlaunch env --json`.
type envEntry struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
	Secret bool   `json:"secret,omitempty"`
}

// redacted is what a credential's value is shown as without --show-secrets.
const redacted = "***"

func newEnvCmd(a *app) *cobra.Command {
	var (
		f           specFlags
		explain     bool
		showSecrets bool
	)
	cmd := &cobra.Command{
		Use:   "env -p NAME [flags]",
		Short: "Print the environment a child of the profile would get (nothing is started)",
		Long: `env prints the environment exec would give a child of profile NAME, as NAME=VALUE lines, sorted.
--explain adds where each entry came from: launcher, derived, profile:<file>:<line>, or flag.
Credential values are shown as *** unless --show-secrets.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := f.spec(cmd.Flags(), nil, a.stdin)
			if err != nil {
				return err
			}
			if spec.Profile == "" {
				return invalidf("env: -p/--profile is required (or \"profile\" in --spec)")
			}
			l, err := a.newLauncher()
			if err != nil {
				return err
			}
			environ, err := l.Environ(cmd.Context(), spec)
			if err != nil {
				return err
			}
			entries := envEntries(environ, showSecrets)
			if a.json {
				return printJSON(a.stdout, entries)
			}
			return writeEnv(a.stdout, entries, explain)
		},
	}
	f.addEnvFlags(cmd.Flags())
	cmd.Flags().BoolVar(&explain, "explain", false, "show each entry's source")
	cmd.Flags().BoolVar(&showSecrets, "show-secrets", false, "show credential values instead of ***")
	return cmd
}

// envEntries converts the launcher's environ for display, redacting credentials unless asked not to.
func envEntries(environ profile.Environ, showSecrets bool) []envEntry {
	out := make([]envEntry, 0, len(environ))
	for _, e := range environ {
		v := e.Value
		if e.Secret && !showSecrets {
			v = redacted
		}
		out = append(out, envEntry{Name: e.Name, Value: v, Source: e.Source, Secret: e.Secret})
	}
	return out
}

// writeEnv prints NAME=VALUE lines; with explain, the source comes first in an aligned column. A name,
// value or source that holds a control character or invalid UTF-8 is shown quoted (printable): the
// .env is the profile's, and a worker may have written escape sequences into it.
func writeEnv(w io.Writer, entries []envEntry, explain bool) error {
	if !explain {
		for _, e := range entries {
			if _, err := fmt.Fprintf(w, "%s=%s\n", printable(e.Name), printable(e.Value)); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tNAME=VALUE")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s=%s\n", printable(e.Source), printable(e.Name), printable(e.Value))
	}
	return tw.Flush()
}
