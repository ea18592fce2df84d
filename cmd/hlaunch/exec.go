package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/worker"
)

func newExecCmd(a *app) *cobra.Command {
	var f specFlags
	cmd := &cobra.Command{
		Use:   "exec -p NAME [flags] -- CMD [ARGS...]",
		Short: "Run a command for a profile: clean environment, own cgroup or scope, identity receipt",
		Long: `exec runs CMD for the hermes profile NAME. The child's environment is built only from the profile's
files and the flags; it is placed (--scope) before its first instruction.

In the foreground the child gets hlaunch's stdin, stdout and stderr as the same file descriptors, receives
the signals hlaunch receives (INT TERM HUP QUIT USR1 USR2 WINCH), and hlaunch exits with its exit code
(128+N when signal N ended it). With --detach the worker is started under a shim and its receipt is
printed as JSON.`,
		Args: func(cmd *cobra.Command, args []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := f.spec(cmd.Flags(), args, a.stdin)
			if err != nil {
				return err
			}
			// The spec is checked once, by the launcher (Run and StartWith: Spec.Validate, before anything is
			// created on the host): bad input starts nothing.
			sigs := a.settleRelay(!spec.Detach)
			l, err := a.newLauncher()
			if err != nil {
				return err
			}
			if spec.Detach {
				return a.start(cmd.Context(), l, spec)
			}
			return a.runForeground(l, spec, sigs)
		},
	}
	fs := cmd.Flags()
	// Everything after the command is the command's: `hlaunch exec -p b env -i` must not parse -i.
	fs.SetInterspersed(false)
	f.addExecFlags(fs)
	return cmd
}

// start launches detached and prints the receipt.
func (a *app) start(ctx context.Context, l *launcher.Launcher, spec worker.Spec) error {
	// The receipt is printed before the worker may run: with --stdio inherit it shares our stdout, and the
	// receipt must come first.
	var printErr error
	printed := false
	onReceipt := func(r *worker.Receipt) { printed, printErr = true, printJSON(a.stdout, r) }
	r, err := l.StartWith(ctx, spec, worker.Stdio{Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, OnReceipt: onReceipt})
	if err != nil {
		return err
	}
	if !printed {
		return printJSON(a.stdout, r)
	}
	return printErr
}

// runForeground runs the child with hlaunch's own stdio and exits with its code.
func (a *app) runForeground(l *launcher.Launcher, spec worker.Spec, sigs launcher.Signals) error {
	// Background, not the command's context: an interrupt is the child's to handle, not a reason for
	// hlaunch to abandon it.
	stdio := worker.Stdio{Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr}
	code, err := l.Run(context.Background(), spec, stdio, sigs)
	if err != nil {
		return err
	}
	if code != 0 {
		return exitStatus(code)
	}
	return nil
}
