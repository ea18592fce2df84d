package main

import (
	"github.com/spf13/cobra"
)

func newStopCmd(a *app) *cobra.Command {
	var (
		grace string
		pid   int
		fp    string
	)
	cmd := &cobra.Command{
		Use:   "stop (ID|TOKEN | --pid N --fingerprint FP) [--grace DUR]",
		Short: "SIGTERM, wait up to the grace, then kill the whole cgroup; exit 0 only when verified empty",
		Long: `stop sends SIGTERM to every process of the worker, waits up to --grace for its cgroup to empty, then
kills the whole cgroup, and exits 0 only when the cgroup is verified empty. A worker whose identity does
not verify gets zero signals: exit 3 (foreign or recycled) or 4 (unverified).

--pid N --fingerprint "<epoch>|<start>" stops a hermes gateway row's process under the same rules (the
leader only: a hermes row has no cgroup).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			legacy, err := legacyArgs(cmd, args, false)
			if err != nil {
				return err
			}
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
			if legacy {
				rec, err := l.LegacyStop(ctx, pid, fp, d)
				if err != nil {
					return err
				}
				return a.printRecord(rec)
			}
			rec, err := l.Stop(ctx, args[0], d)
			if err != nil {
				return err
			}
			return a.printRecord(rec)
		},
	}
	cmd.Flags().StringVar(&grace, "grace", "5s", "time between SIGTERM and the whole-cgroup kill")
	cmd.Flags().Var((*pidFlag)(&pid), "pid", "a hermes row's PID, decimal (with --fingerprint)")
	cmd.Flags().StringVar(&fp, "fingerprint", "", "a hermes row's fingerprint, \"<epoch>|<start>\"")
	return cmd
}
