package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/worker"
)

func newLedgerCmd(a *app) *cobra.Command {
	var key, since string
	cmd := &cobra.Command{
		Use:   "ledger [--key K] [--since T]",
		Short: "Show the execution ledger: one record per execution, oldest first",
		Long: `ledger prints the durable execution records: key, profile, argv (credentials redacted), start and
end, exit code or signal, timed out, OOM-killed, peak memory, placement mode. --since takes an RFC 3339
time, a date (2006-01-02) or a duration back from now (24h).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := records.LedgerQuery{Key: key}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return err
				}
				q.Since = t
			}
			l, err := a.newLauncher()
			if err != nil {
				return err
			}
			recs, err := l.Ledger(cmd.Context(), q)
			if err != nil {
				return err
			}
			if a.json {
				if recs == nil {
					recs = []worker.Record{}
				}
				return printJSON(a.stdout, recs)
			}
			return writeLedger(a.stdout, recs)
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "only executions that held this key")
	cmd.Flags().StringVar(&since, "since", "", "only executions started at or after T")
	return cmd
}

// writeLedger prints the ledger table.
func writeLedger(w io.Writer, recs []worker.Record) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "STARTED\tENDED\tID\tKEY\tPROFILE\tMODE\tSTATE\tRESULT\tMEM PEAK\tCOMMAND")
	for _, r := range recs {
		peak := "-"
		if r.MemoryPeak != 0 {
			peak = humanBytes(r.MemoryPeak)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			shortTime(r.StartedAt), shortTime(r.EndedAt), r.ID, orDash(printable(r.Key)), orDash(r.Profile), orDash(r.Mode),
			orDash(r.State), outcome(r), peak, shortArgv(r.Argv))
	}
	return tw.Flush()
}
