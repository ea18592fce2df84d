package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/worker"
)

func newPsCmd(a *app) *cobra.Command {
	var limit int
	var after string
	cmd := &cobra.Command{
		Use:   "ps [--limit N] [--after ID]",
		Short: "List detached workers, each verified now",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return invalidf("--limit %d: want a count of records, 1 or more (0: all)", limit)
			}
			if after != "" && !worker.IsID(after) {
				return invalidf("--after %q: want a worker id (w-<12 hex>)", after)
			}
			l, err := a.newLauncher()
			if err != nil {
				return err
			}
			recs, err := l.ListPage(cmd.Context(), after, limit)
			if err != nil {
				return err
			}
			if a.json {
				if recs == nil {
					recs = []worker.Record{} // "[]", never "null": callers iterate it
				}
				return printJSON(a.stdout, recs)
			}
			return writeWorkers(a.stdout, recs)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most N workers, in id order (a page; 0: all)")
	cmd.Flags().StringVar(&after, "after", "", "list the workers whose ids sort after ID (the next page: the last id of this one)")
	return cmd
}

// writeWorkers prints the `ps` table.
func writeWorkers(w io.Writer, recs []worker.Record) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPID\tSTATE\tRESULT\tMODE\tPROFILE\tKEY\tMEM\tPIDS\tSTARTED\tCOMMAND")
	for _, r := range recs {
		mem, pids := "-", "-"
		if r.MemoryCurrent != 0 {
			mem = humanBytes(r.MemoryCurrent)
		}
		if r.PidsCurrent != 0 {
			pids = strconv.FormatUint(r.PidsCurrent, 10)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.ID, r.PID, orDash(r.State), outcome(r), orDash(r.Mode), orDash(r.Profile), orDash(printable(r.Key)),
			mem, pids, shortTime(r.StartedAt), shortArgv(r.Argv))
	}
	return tw.Flush()
}
