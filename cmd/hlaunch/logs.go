package main

import (
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/termfilter"
)

func newLogsCmd(a *app) *cobra.Command {
	var follow bool
	var offset string
	cmd := &cobra.Command{
		Use:   "logs [-f] [--offset N] ID|TOKEN",
		Short: "Print a detached worker's log (and follow it with -f)",
		Long: `logs prints the worker's log from byte --offset N (default 0; offsets count from the log's first byte
across rotations, and an offset before the oldest byte still held starts there). With -f it goes on
printing what the worker writes until the worker has ended and its output is drained. Output to a
terminal passes through the terminal filter (only what draws on the screen). Exit 0; 125 for an unknown
worker or one without a log of hlaunch's own.`,
		Args: exactArgs(1, "one worker id or token"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var from int64
			if offset != "" {
				n, err := strconv.ParseInt(offset, 10, 64)
				if err != nil || n < 0 {
					return invalidf("--offset %q: want a byte offset, 0 or more", offset)
				}
				from = n
			}
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			l, err := a.newLauncher()
			if err != nil {
				return err
			}
			var out io.Writer = a.stdout
			if _, err := unix.IoctlGetTermios(int(a.stdout.Fd()), unix.TCGETS); err == nil {
				// A worker is hostile: its bytes reach a terminal only as what draws on the screen.
				out = &filtered{w: a.stdout, f: termfilter.New(termfilter.Options{})}
			}
			return l.ReadLog(ctx, args[0], from, follow, out, func(int64) error { return nil })
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow: print new output until the worker has ended")
	cmd.Flags().StringVar(&offset, "offset", "", "start at byte N of the log")
	return cmd
}

// filtered writes what of a worker's bytes draws on a terminal.
type filtered struct {
	w   *os.File
	f   *termfilter.Filter
	buf []byte
}

func (t *filtered) Write(p []byte) (int, error) {
	t.buf = t.f.Append(t.buf[:0], p)
	if _, err := t.w.Write(t.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}
