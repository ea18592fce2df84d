package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/launcher"
)

// gcResult is `hlaunch gc --json`'s answer.
type gcResult struct {
	Removed []string `json:"removed"`
}

func newGCCmd(a *app) *cobra.Command {
	var parent string
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove empty worker cgroups and records of ended workers that hlaunch created",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := a.config()
			cfg.Defaults.CgroupParent = parent
			l, err := launcher.New(cfg)
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
	cmd.Flags().StringVar(&parent, "cgroup-parent", "", "the cgroup parent to sweep for empty worker cgroups (default hlaunch)")
	return cmd
}
