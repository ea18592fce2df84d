// Package flagerr words a command-line flag error as hlaunch does, for both binaries (hlaunch and
// hlaunch-sidecar): one line that names the flag, what was wrong and what is accepted, without the flag
// parser's internals. The caller marks it as bad input (exit 125).
package flagerr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// Message rewrites a flag-parsing error of cmd as one line that names the flag, what was wrong and what is
// accepted, without the parser's internals (strconv.ParseInt, "for \"--pids\" flag"). A subcommand's
// line starts with its name ("exec: ").
func Message(cmd *cobra.Command, err error) string {
	var inv *pflag.InvalidValueError
	if errors.As(err, &inv) {
		f := inv.GetFlag()
		if _, ok := f.Value.(worker.DurationFlag); ok {
			// The one duration phrase, as --timeout and a spec's durations give it: "must not be negative (want ...)".
			return fmt.Sprintf("%s--%s %s: %v", prefix(cmd), f.Name, quote(inv.GetValue()), errors.Unwrap(inv))
		}
		return fmt.Sprintf("%s--%s %s: want %s", prefix(cmd), f.Name, quote(inv.GetValue()), accepted(f))
	}
	var req *pflag.ValueRequiredError
	if errors.As(err, &req) {
		f := req.GetFlag()
		return fmt.Sprintf("%s--%s needs a value: %s", prefix(cmd), f.Name, accepted(f))
	}
	var ne *pflag.NotExistError
	if errors.As(err, &ne) {
		name := "--" + ne.GetSpecifiedName()
		if ne.GetSpecifiedName() == "" {
			name = "-" + ne.GetSpecifiedShortnames()
		}
		msg := "unknown flag " + name
		if s := similarFlag(cmd, ne.GetSpecifiedName()); s != "" {
			msg += "; did you mean --" + s + "?"
		}
		return fmt.Sprintf("%s%s (see %s --help)", prefix(cmd), msg, cmd.CommandPath())
	}
	return fmt.Sprintf("%s%s", prefix(cmd), strings.TrimSuffix(err.Error(), "\n"))
}

// prefix is "exec: " for a subcommand and "" for the root.
func prefix(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return ""
	}
	return cmd.Name() + ": "
}

func quote(s string) string { return `"` + s + `"` }

// accepted says what a flag of this type takes.
func accepted(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "int", "int64", "int32":
		return "a whole number"
	case "uint", "uint64", "uint32":
		return "a whole number, 0 or more"
	case "float64", "float32":
		return "a number, e.g. 0.5"
	case "bool":
		return "true or false"
	case "pid":
		return "a process id: decimal digits, 1 or more, no sign, prefix or leading zero"
	case "duration":
		return strings.TrimPrefix(worker.DurationAccepted, "want ")
	default:
		return "a value (" + f.Usage + ")"
	}
}

// similarFlag is a flag of cmd whose name is within two edits of name, or "".
func similarFlag(cmd *cobra.Command, name string) string {
	if name == "" {
		return ""
	}
	best, bestD := "", 3
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := editDistance(name, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
