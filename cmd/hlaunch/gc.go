package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/retentionflag"
)

func newGCCmd(a *app) *cobra.Command {
	var (
		parent string
		ret    launcher.Retention
	)
	cmd := &cobra.Command{
		Use:   "gc [--keep N] [--max-age DUR] [--ledger-keep N] [--ledger-max-age DUR]",
		Short: "Remove ended workers beyond the retention (records, logs, empty cgroups), prune the ledger, sweep dead writers' temp files",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := retentionflag.Check(ret); err != nil {
				return err
			}
			cfg := a.config()
			cfg.Defaults.CgroupParent = parent
			l, err := launcher.New(cfg)
			if err != nil {
				return err
			}
			rep, err := l.GC(cmd.Context(), ret)
			if err != nil {
				return err
			}
			if a.json {
				if rep.Removed == nil {
					rep.Removed = []string{}
				}
				if rep.Quarantined == nil {
					rep.Quarantined = []string{}
				}
				return printJSON(a.stdout, rep)
			}
			for _, id := range rep.Removed {
				if _, err := fmt.Fprintf(a.stdout, "removed %s\n", id); err != nil {
					return err
				}
			}
			for _, id := range rep.Quarantined {
				if _, err := fmt.Fprintf(a.stdout, "quarantined %s\n", id); err != nil {
					return err
				}
			}
			if rep.QuarantineDropped > 0 {
				if _, err := fmt.Fprintf(a.stdout, "removed %d oldest quarantined records\n", rep.QuarantineDropped); err != nil {
					return err
				}
			}
			if rep.LedgerPruned > 0 {
				if _, err := fmt.Fprintf(a.stdout, "pruned %d ledger records\n", rep.LedgerPruned); err != nil {
					return err
				}
			}
			if rep.TempsRemoved > 0 {
				_, err := fmt.Fprintf(a.stdout, "removed %d temp files of dead writers\n", rep.TempsRemoved)
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&parent, "cgroup-parent", "", "the cgroup parent to sweep for empty worker cgroups (default hlaunch)")
	retentionflag.Add(cmd.Flags(), &ret)
	return cmd
}
