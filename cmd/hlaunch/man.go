//go:build mangen

package main

import (
	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/manpage"
)

// buildCommands is, in the manual-page generator's build (-tags mangen), the hidden `__man DIR` command
// that writes every command's page (internal/manpage). `make man` runs it; the installed binary has none.
func buildCommands(a *app) []*cobra.Command {
	return []*cobra.Command{{
		Use:    "__man DIR",
		Hidden: true,
		Args:   exactArgs(1, "a directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return manpage.WriteTree(cmd.Root(), args[0])
		},
	}}
}
