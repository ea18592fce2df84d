package main

import (
	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/worker"
)

func newStatusCmd(a *app) *cobra.Command {
	var (
		pid int
		fp  string
	)
	cmd := &cobra.Command{
		Use:   "status (ID|TOKEN | --pid N --fingerprint FP)",
		Short: "Verify one worker now; the exit code is the answer",
		Long: `status verifies a worker's identity now and prints what is known about it.
Exit code: 0 running, 1 exited, 3 foreign boot or machine or recycled PID or a record that cannot be
read or verified (corrupt, unknown-version), 4 unverified, 125 malformed.

--pid N --fingerprint "<boot_id>:<pid1 start>|<start>" applies the same rules to a row of the hermes
gateway's process table: another boot is foreign, "unverified" and an empty (NULL) fingerprint are refused.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			legacy, err := legacyArgs(cmd, args, false)
			if err != nil {
				return err
			}
			l, err := a.newLauncher()
			if err != nil {
				return err
			}
			var rec worker.Record
			if legacy {
				rec, err = l.LegacyStatus(cmd.Context(), pid, fp)
			} else {
				rec, err = l.Status(cmd.Context(), args[0])
			}
			if err != nil {
				return err
			}
			if err := a.printRecord(rec); err != nil {
				return err
			}
			if code := stateExitCode(rec.State); code != worker.ExitOK {
				return exitStatus(code)
			}
			return nil
		},
	}
	cmd.Flags().Var((*pidFlag)(&pid), "pid", "a hermes row's PID, decimal (with --fingerprint)")
	cmd.Flags().StringVar(&fp, "fingerprint", "", "a hermes row's fingerprint, \"<epoch>|<start>\" or \"unverified\"")
	return cmd
}

// printRecord prints one worker as JSON or as field lines.
func (a *app) printRecord(rec worker.Record) error {
	if a.json {
		return printJSON(a.stdout, rec)
	}
	return writeRecord(a.stdout, rec)
}

// legacyArgs checks a command that takes either one worker id or token, or --pid with --fingerprint (a
// hermes gateway row), and reports which one it got. all is --all, which only a worker has.
func legacyArgs(cmd *cobra.Command, args []string, all bool) (bool, error) {
	verb := cmd.Name()
	legacy := cmd.Flags().Changed("pid") || cmd.Flags().Changed("fingerprint")
	switch {
	case legacy && len(args) > 0:
		return false, invalidf("%s: give either a worker id/token or --pid with --fingerprint, not both", verb)
	case legacy && !cmd.Flags().Changed("pid"):
		return false, invalidf("%s: --fingerprint needs --pid", verb)
	case legacy && all:
		return false, invalidf("%s: --all needs a worker id or token (a hermes row has no cgroup)", verb)
	case !legacy && len(args) != 1:
		return false, invalidf("%s: want one worker id or token", verb)
	}
	return legacy, nil
}
