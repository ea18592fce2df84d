package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// signalResult is `hlaunch signal --json`'s answer.
type signalResult struct {
	Ref    string `json:"ref"`
	Signal string `json:"signal"`
	All    bool   `json:"all"`
	Sent   bool   `json:"sent"`
}

func newSignalCmd(a *app) *cobra.Command {
	var (
		sigName string
		all     bool
		pid     int
		fp      string
	)
	cmd := &cobra.Command{
		Use:   "signal (ID|TOKEN | --pid N --fingerprint FP) [-s SIG] [--all]",
		Short: "Send a signal to a worker, only if its identity verifies as running",
		Long: `signal sends SIG (default TERM) to the worker's leader through a pidfd, or with --all to every
process in its cgroup. A worker whose identity does not verify gets zero signals: exit 3 (foreign or
recycled) or 4 (unverified), with the reason on one line.

--pid N --fingerprint "<epoch>|<start>" signals a hermes gateway row's process under the same rules.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			legacy, err := legacyArgs(cmd, args, all)
			if err != nil {
				return err
			}
			sig, err := worker.ParseSignal(sigName)
			if err != nil {
				return &invalidError{msg: "-s/--" + message(err)}
			}
			l, err := a.newLauncher()
			if err != nil {
				return err
			}
			ref := fmt.Sprintf("pid %d", pid)
			if legacy {
				err = l.LegacySignal(cmd.Context(), pid, fp, sig)
			} else {
				ref = args[0]
				err = l.Signal(cmd.Context(), ref, sig, all)
			}
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, signalResult{Ref: ref, Signal: worker.SignalName(sig), All: all, Sent: true})
			}
			target := "leader"
			if all {
				target = "whole cgroup"
			}
			_, err = fmt.Fprintf(a.stdout, "%s sent to %s (%s)\n", worker.SignalName(sig), ref, target)
			return err
		},
	}
	cmd.Flags().StringVarP(&sigName, "signal", "s", "TERM", "signal name or number")
	cmd.Flags().BoolVar(&all, "all", false, "signal every process in the worker's cgroup, not just the leader")
	cmd.Flags().Var((*pidFlag)(&pid), "pid", "a hermes row's PID, decimal (with --fingerprint)")
	cmd.Flags().StringVar(&fp, "fingerprint", "", "a hermes row's fingerprint, \"<epoch>|<start>\"")
	return cmd
}
