package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/launcher"
)

func newPsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "ps",
		Short: "List detached workers, each verified now",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := a.newLauncher()
			if err != nil {
				return err
			}
			recs, err := l.List(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				if recs == nil {
					recs = []launcher.Record{} // "[]", never "null": callers iterate it
				}
				return printJSON(a.stdout, recs)
			}
			return writeWorkers(a.stdout, recs)
		},
	}
}

// writeWorkers prints the `ps` table.
func writeWorkers(w io.Writer, recs []launcher.Record) error {
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
