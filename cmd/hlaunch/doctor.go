package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/doctor"
)

func newDoctorCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Report what this host offers and what --scope auto would choose",
		Long: `doctor probes the host: cgroup mode and mounts, controllers, cgroup.kill, CLONE_INTO_CGROUP, pidfd,
user namespaces, system and user bus reachability (with reasons), linger, the supplementary groups a
sandboxed worker would keep, and what --scope auto would choose and why. Exit 0 when a restart-safe placement is available, 1 when only degraded.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := a.newLauncher()
			if err != nil {
				return err
			}
			rep, err := l.Doctor(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				err = printJSON(a.stdout, rep)
			} else {
				err = writeReport(a.stdout, rep)
			}
			if err != nil {
				return err
			}
			if !rep.RestartSafe {
				return exitStatus(1)
			}
			return nil
		},
	}
}

// writeReport prints the doctor report as aligned lines.
func writeReport(w io.Writer, r doctor.Report) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	check := func(c doctor.Check) string {
		if c.Detail == "" {
			return yes(c.OK)
		}
		return yes(c.OK) + ": " + c.Detail
	}
	fmt.Fprintf(tw, "cgroup mode\t%s\n", orDash(r.CgroupMode))
	for _, k := range slices.Sorted(maps.Keys(r.Mounts)) {
		fmt.Fprintf(tw, "  mount %s\t%s\n", k, r.Mounts[k])
	}
	fmt.Fprintf(tw, "controllers\t%s\n", orDash(strings.Join(r.Controllers, " ")))
	fmt.Fprintf(tw, "delegated\t%s\n", check(r.Delegated))
	fmt.Fprintf(tw, "cgroup.kill\t%s\n", yes(r.CgroupKill))
	fmt.Fprintf(tw, "CLONE_INTO_CGROUP\t%s\n", yes(r.CloneIntoCgroup))
	fmt.Fprintf(tw, "pidfd\t%s\n", yes(r.Pidfd))
	fmt.Fprintf(tw, "user namespaces\t%s\n", check(r.UserNamespaces))
	fmt.Fprintf(tw, "system bus\t%s\n", check(r.SystemBus))
	fmt.Fprintf(tw, "user bus\t%s\n", check(r.UserBus))
	fmt.Fprintf(tw, "linger\t%s\n", check(r.Linger))
	fmt.Fprintf(tw, "kept groups\t%s\n", check(r.KeptGroups))
	fmt.Fprintf(tw, "--scope auto\t%s\n", strings.TrimSuffix(orDash(r.AutoChoice)+": "+r.AutoReason, ": "))
	fmt.Fprintf(tw, "restart-safe\t%s\n", yes(r.RestartSafe))
	return tw.Flush()
}
