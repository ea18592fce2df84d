package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/flagerr"
	"github.com/hlaunch/hlaunch/internal/launchflag"
	"github.com/hlaunch/hlaunch/internal/version"
)

// rootLong is the root command's help, also the DESCRIPTION of hlaunch(1). It names only what an installed
// system has: the manual pages and --help, never a file of the source tree.
const rootLong = `hlaunch starts one child (a worker) for a hermes profile. The child's environment is built only from
that profile's files and what the caller names; it is placed in its own cgroup or systemd scope before
its first instruction; and the caller gets an identity token that every later signal is verified against.

Every command has a manual page (man hlaunch-exec, man hlaunch-status, ...) and --help. Exit codes:
0 success or running, 1 exited (not running), 3 refused (identity does not verify: zero signals sent),
4 unverified, 73 key held, 75 no restart-safe placement (--require-scope) or no room for a detached
worker's records, 124 wait timed out,
125 bad input or hlaunch's own error (nothing started), 126 cannot run the command, 127 command not
found in the child's PATH; a foreground exec passes the child's own code through (128+N for signal N).
An error is one line on stderr, "hlaunch: <message>"; with --json one object on stdout,
{"error":{"code":...,"message":...}}.

Environment: HLAUNCH_ROOT (--root), HERMES_HOME (the root derived from it), HLAUNCH_STATE_DIR
(--state-dir), HLAUNCH_LEDGER_DIR (--ledger-dir), XDG_RUNTIME_DIR (the non-root state directory),
DBUS_SYSTEM_BUS_ADDRESS and DBUS_SESSION_BUS_ADDRESS (the systemd manager's bus).`

// newRootCmd builds the hlaunch command tree; a receives the global flags.
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:     "hlaunch",
		Short:   "Launch a child for a hermes profile with a clean environment, its own cgroup and a verifiable identity",
		Long:    rootLong,
		Version: version.Version,
		Example: `  hlaunch env -p b --explain
  hlaunch exec -p b --scope cgroup --memory 512M -- python3 tool.py
  hlaunch exec -p b --detach --key cron-42 --timeout 10m -- ./job.sh
  hlaunch status w-84df33fba087`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Only a foreground exec keeps the early signal subscription (see relay); exec decides in its RunE.
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Name() != "exec" {
				a.settleRelay(false)
			}
			return refuseJSON(cmd, a.json)
		},
		// An unknown subcommand must be an error with exit 125, not cobra's help text and exit 0.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.SuggestionsMinimumDistance = 2
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.CompletionOptions.HiddenDefaultCmd = false
	pf := root.PersistentFlags()
	launchflag.AddDirs(pf, &a.dirs)
	pf.BoolVar(&a.json, "json", false, "answer in JSON on stdout (errors too: {\"error\":{\"code\",\"message\"}})")

	// Every flag error (unknown flag, bad number) is bad input: exit 125, one line, JSON code "invalid". On
	// the root, a flag error usually means a mistyped command whose flags the root does not know
	// (`hlaunch exce -p b`): say that, not "unknown shorthand flag".
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if !cmd.HasParent() {
			if name := firstCommandWord(cmd, a.args); name != "" {
				return unknownCommand(cmd, name)
			}
		}
		return invalidf("%s", flagerr.Message(cmd, err))
	})

	root.AddCommand(
		newExecCmd(a),
		newEnvCmd(a),
		newPsCmd(a),
		newStatusCmd(a),
		newSignalCmd(a),
		newStopCmd(a),
		newWaitCmd(a),
		newLogsCmd(a),
		newGCCmd(a),
		newLedgerCmd(a),
		newDoctorCmd(a),
		newEventsCmd(a),
		newSidecarCmd(a),
		newVersionCmd(a),
	)
	root.AddCommand(buildCommands(a)...)
	addExamples(root)
	if a.stdout != nil {
		// cobra's completion scripts go to the writer set when the command is made, not when it runs.
		root.SetOut(a.stdout)
	}
	// cobra's completion command (bash, zsh, fish, powershell), made now rather than at Execute so that the
	// manual pages and the docs-flag test see it too.
	root.InitDefaultCompletionCmd()
	finishCompletion(root)
	return root
}

// refuseJSON refuses --json for a command whose output has no JSON form: events' is already a stream of
// JSON lines and completion's a shell script (the daemon, sidecar, takes its arguments unparsed and has
// no --json). A flag accepted and ignored would let a caller believe it got hlaunch's JSON answer.
func refuseJSON(cmd *cobra.Command, json bool) error {
	if !json {
		return nil
	}
	switch {
	case cmd.Name() == "events":
		return invalidf("events: --json: events has no JSON answer, it prints the sidecar's events as JSON lines (leave --json out)")
	case cmd.Name() == "completion" || cmd.HasParent() && cmd.Parent().Name() == "completion":
		return invalidf("completion: --json: completion prints a shell script, not JSON (leave --json out)")
	}
	return nil
}

// cmdPrefix is "exec: " for a subcommand and "" for the root, for error lines that already start with
// "hlaunch: ".
func cmdPrefix(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return ""
	}
	return cmd.Name() + ": "
}

// unknownCommand is the error for a first word that names no command, with cobra's suggestions.
func unknownCommand(root *cobra.Command, name string) error {
	if s := root.SuggestionsFor(name); len(s) > 0 {
		return invalidf("unknown command %s; did you mean %s? (see hlaunch --help)", quote(name), quote(s[0]))
	}
	return invalidf("unknown command %s: want one of %s (see hlaunch --help)", quote(name), strings.Join(commandNames(root), ", "))
}

// commandNames lists the root's visible commands.
func commandNames(root *cobra.Command) []string {
	var names []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return names
}

// firstCommandWord is the first argument that is neither a global flag nor a global flag's value, when it
// names no command ("" otherwise): the word a user meant as the command.
func firstCommandWord(root *cobra.Command, args []string) string {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w == "--" {
			return ""
		}
		if strings.HasPrefix(w, "-") {
			name := strings.TrimLeft(w, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if f := root.PersistentFlags().Lookup(name); f != nil && f.Value.Type() != "bool" {
				i++ // the flag's value
			}
			continue
		}
		if c, _, err := root.Find([]string{w}); err == nil && c != root {
			return ""
		}
		return w
	}
	return ""
}

// quote is %q without Go's escapes for ordinary text.
func quote(s string) string { return `"` + s + `"` }
