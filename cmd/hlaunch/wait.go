package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

func newWaitCmd(a *app) *cobra.Command {
	var timeout string
	cmd := &cobra.Command{
		Use:   "wait ID|TOKEN [--timeout DUR]",
		Short: "Wait until a worker ends and print its exit status when known",
		Long: `wait blocks until the worker has ended and prints its final record (its exit code or signal when
known). Exit 0 once it has ended; 124 when --timeout elapsed first (the worker is left running).`,
		Args: exactArgs(1, "one worker id or token"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			if timeout != "" {
				d, err := parseGrace("--timeout", timeout)
				if err != nil {
					return err
				}
				var cancelT context.CancelFunc
				ctx, cancelT = context.WithTimeout(ctx, d)
				defer cancelT()
			}
			l, err := a.newLauncher()
			if err != nil {
				return err
			}
			rec, err := l.Wait(ctx, args[0])
			if errors.Is(err, context.DeadlineExceeded) || (err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)) {
				return fmt.Errorf("wait %s: %w after %s", args[0], errWaitTimeout, timeout)
			}
			if err != nil && errors.Is(ctx.Err(), context.Canceled) {
				return fmt.Errorf("wait %s: interrupted; the worker is left as it was: %w", args[0], err)
			}
			if err != nil {
				return err
			}
			return a.printRecord(rec)
		},
	}
	cmd.Flags().StringVar(&timeout, "timeout", "", "give up after DUR (exit 124); default: wait for ever")
	return cmd
}
