package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// stateExitCode is the `hlaunch status` exit code for a verified state (docs/exit-codes.md): a caller can
// branch on it without parsing output.
func stateExitCode(state fingerprint.State) int {
	switch state {
	case fingerprint.Running:
		return worker.ExitOK
	case fingerprint.Exited:
		return worker.ExitExited
	case fingerprint.ForeignBoot, fingerprint.ForeignMachine, fingerprint.Recycled,
		worker.StateCorrupt, worker.StateUnknownVersion:
		return worker.ExitRefused
	case fingerprint.Unverified:
		return worker.ExitUnverified
	default: // fingerprint.Malformed and anything this build does not know
		return worker.ExitInternal
	}
}

// outcome says how a worker ended, or that it has not: "exit 3", "SIGKILL", "timed out (SIGTERM)", ...
func outcome(r worker.Record) string {
	var parts []string
	switch {
	case r.ExitCode != nil:
		parts = append(parts, "exit "+strconv.Itoa(*r.ExitCode))
	case r.Signal != "":
		parts = append(parts, r.Signal)
	}
	if r.TimedOut {
		parts = append(parts, "timed out")
	}
	if r.OOMKilled {
		parts = append(parts, "oom-killed")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// writeRecord prints one worker as aligned "field  value" lines, leaving out what is unknown.
func writeRecord(w io.Writer, r worker.Record) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, printable(v))
		}
	}
	row("id", r.ID)
	row("state", string(r.State))
	row("reason", r.Reason)
	row("record_error", r.RecordError)
	if r.ExitCode != nil || r.Signal != "" || r.TimedOut || r.OOMKilled {
		row("result", outcome(r))
	}
	if r.PID != 0 {
		row("pid", strconv.Itoa(r.PID))
	}
	row("mode", string(r.Mode))
	row("profile", r.Profile)
	row("home", r.Home)
	row("argv", argvText(r.Argv))
	row("key", r.Key)
	row("cgroup", r.Cgroup)
	row("unit", r.Unit)
	row("invocation_id", r.InvocationID)
	row("verification", r.Verification)
	row("fingerprint", r.Fingerprint)
	row("started_at", r.StartedAt)
	row("ended_at", r.EndedAt)
	if r.MemoryCurrent != 0 {
		row("memory", humanBytes(r.MemoryCurrent))
	}
	if r.MemoryPeak != 0 {
		row("memory_peak", humanBytes(r.MemoryPeak))
	}
	if r.PidsCurrent != 0 {
		row("pids", strconv.FormatUint(r.PidsCurrent, 10))
	}
	row("warning", r.Warning)
	row("token", r.Token)
	return tw.Flush()
}

// humanBytes formats a byte count with a binary unit, as the --memory flag takes it.
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatUint(n, 10) + "B"
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64) + string("KMGTP"[exp])
}

// shortTime shows an RFC 3339 timestamp to the second, in UTC, for tables; anything else as it is.
func shortTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return orDash(s)
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// orDash shows an empty table cell as "-".
func orDash[S ~string](s S) string {
	if s == "" {
		return "-"
	}
	return string(s)
}

// argvText shows an argv as words, each quoted when it is not printable (see printable).
func argvText(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = printable(a)
	}
	return strings.Join(words, " ")
}

// shortArgv keeps a table row readable; the full argv is in `status` and --json.
func shortArgv(argv []string) string {
	s := argvText(argv)
	const max = 48
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return orDash(s)
}
