package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// gcResult is `hlaunch gc --json`'s answer.
type gcResult struct {
	Removed []string `json:"removed"`
}

func newGCCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Remove empty worker cgroups and records of ended workers that hlaunch created",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := a.newLauncher()
			if err != nil {
				return err
			}
			ids, err := l.GC(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				if ids == nil {
					ids = []string{}
				}
				return printJSON(a.stdout, gcResult{Removed: ids})
			}
			for _, id := range ids {
				if _, err := fmt.Fprintf(a.stdout, "removed %s\n", id); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
