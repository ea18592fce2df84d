package main

import (
	"github.com/spf13/cobra"
)

func newStopCmd(a *app) *cobra.Command {
	var grace string
	cmd := &cobra.Command{
		Use:   "stop ID|TOKEN [--grace DUR]",
		Short: "SIGTERM, wait up to the grace, then kill the whole cgroup; exit 0 only when verified empty",
		Args:  exactArgs(1, "one worker id or token"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := parseGrace("--grace", grace)
			if err != nil {
				return err
			}
			l, err := a.newLauncher()
			if err != nil {
				return err
			}
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			rec, err := l.Stop(ctx, args[0], d)
			if err != nil {
				return err
			}
			return a.printRecord(rec)
		},
	}
	cmd.Flags().StringVar(&grace, "grace", "5s", "time between SIGTERM and the whole-cgroup kill")
	return cmd
}
