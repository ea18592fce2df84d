package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the hlaunch command tree; a receives the global flags.
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "hlaunch",
		Short: "Launch a child for a hermes profile with a clean environment, its own cgroup and a verifiable identity",
		Long: `hlaunch starts one child (a worker) for a hermes profile. The child's environment is built only from
that profile's files and what the caller names; it is placed in its own cgroup or systemd scope before
its first instruction; and the caller gets an identity token that every later signal is verified against.

See docs/cli.md for every command and docs/exit-codes.md for the exit codes.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Only a foreground exec keeps the early signal subscription (see relay); exec decides in its RunE.
		PersistentPreRun: func(cmd *cobra.Command, args []string) {
			if cmd.Name() != "exec" {
				a.relay.release()
			}
		},
		// An unknown subcommand must be an error with exit 125, not cobra's help text and exit 0.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return invalidf("unknown command %q (see hlaunch --help)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	pf := root.PersistentFlags()
	pf.StringVar(&a.root, "root", "", "hermes root (default: $HLAUNCH_ROOT, else derived from $HERMES_HOME, else ~/.hermes)")
	pf.StringVar(&a.stateDir, "state-dir", "", "worker records (default: $HLAUNCH_STATE_DIR, else /run/hlaunch for root, else $XDG_RUNTIME_DIR/hlaunch)")
	pf.StringVar(&a.ledgerDir, "ledger-dir", "", "execution ledger, kept across reboots when on a persistent disk (default: $HLAUNCH_LEDGER_DIR, else <state-dir>/ledger)")
	pf.StringVar(&a.policy, "policy", "", "JSON policy file extending the built-in name lists")
	pf.BoolVar(&a.json, "json", false, "answer in JSON on stdout (errors too: {\"error\":{\"code\",\"message\"}})")

	// Every flag error (unknown flag, bad number) is bad input: exit 125, one line, JSON code "invalid".
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return invalidf("%s%v", cmdPrefix(cmd), err)
	})

	root.AddCommand(
		newExecCmd(a),
		newEnvCmd(a),
		newPsCmd(a),
		newStatusCmd(a),
		newSignalCmd(a),
		newStopCmd(a),
		newWaitCmd(a),
		newGCCmd(a),
		newLedgerCmd(a),
		newDoctorCmd(a),
		newSidecarCmd(a),
		newVersionCmd(a),
	)
	return root
}

// cmdPrefix is "exec: " for a subcommand and "" for the root, for error lines that already start with
// "hlaunch: ".
func cmdPrefix(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return ""
	}
	return cmd.Name() + ": "
}
