package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/version"
)

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hlaunch's version (as hlaunch --version; --json for the build details)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := version.Read()
			if a.json {
				return printJSON(a.stdout, v)
			}
			_, err := fmt.Fprintln(a.stdout, v.String())
			return err
		},
	}
}
