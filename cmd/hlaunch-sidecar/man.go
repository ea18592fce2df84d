//go:build mangen

package main

import (
	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/manpage"
)

// buildCommands is, in the manual-page generator's build (-tags mangen), the hidden `__man DIR` command
// that writes hlaunch-sidecar(1) (internal/manpage). `make man` runs it; the installed binary has none.
func buildCommands() []*cobra.Command {
	return []*cobra.Command{{
		Use:    "__man DIR",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return invalidf("__man: want a directory")
			}
			return manpage.WriteTree(cmd.Root(), args[0])
		},
	}}
}
