package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// examples is every command's --help EXAMPLES section (and its manual page's), by command path. One table,
// so a command without examples is visible here and TestEveryCommandHasExamples names it.
func examples() map[string]string {
	return map[string]string{
		"hlaunch exec": `  # Run a tool for profile b in its own cgroup, with limits; stdio, signals and the exit code pass through.
  hlaunch exec -p b --scope cgroup --memory 512M --pids 64 -- python3 tool.py
  # Only b's credentials, and of those only one.
  hlaunch exec -p b --secrets none --pass OPENAI_API_KEY -- ./agent
  # A job that outlives its caller, refused while another worker holding the key runs.
  hlaunch exec -p b --detach --key cron-42 --timeout 10m --log /tmp/cron-42.log -- ./job.sh
  # Sandboxed: only profile b is visible, no network, dropped to an unprivileged user.
  hlaunch exec -p b --sandbox --net none --as 1000:1000 -- ./untrusted.sh
  # The launch described as JSON (field names: the spec schema); flags given override its fields.
  echo '{"profile":"b","argv":["./job.sh"],"timeout":"30s"}' | hlaunch exec --spec -`,
		"hlaunch env": `  hlaunch env -p b --explain
  hlaunch env -p b --secrets none --json`,
		"hlaunch ps": `  hlaunch ps
  hlaunch ps --json`,
		"hlaunch status": `  hlaunch status w-84df33fba087 && echo running
  hlaunch status hl1.AQAB...
  hlaunch status --pid 4242 --fingerprint '4fb34644-...:23|96381'`,
		"hlaunch signal": `  hlaunch signal w-84df33fba087 -s HUP
  hlaunch signal hl1.AQAB... -s TERM --all`,
		"hlaunch stop": `  hlaunch stop w-84df33fba087
  hlaunch stop w-84df33fba087 --grace 30s`,
		"hlaunch logs": `  hlaunch logs w-84df33fba087
  # Follow it to the worker's end, from byte 4096 of its output.
  hlaunch logs -f --offset 4096 w-84df33fba087`,
		"hlaunch wait": `  hlaunch wait w-84df33fba087
  hlaunch wait w-84df33fba087 --timeout 10m --json`,
		"hlaunch gc": `  hlaunch gc
  hlaunch gc --json`,
		"hlaunch ledger": `  hlaunch ledger --key cron-42
  hlaunch ledger --since 24h --json`,
		"hlaunch doctor": `  hlaunch doctor
  hlaunch doctor --json`,
		"hlaunch events": `  # Every event of the sidecar at the default socket, as NDJSON, from the oldest it still holds.
  hlaunch events --since 0
  hlaunch events | jq -r 'select(.type=="exited") | .id'`,
		"hlaunch sidecar": `  # At the default socket, whose directory it makes: /run/hlaunch/sidecar.sock for root.
  hlaunch sidecar --scope auto --warm 2
  hlaunch sidecar --help`,
		"hlaunch version": `  hlaunch version
  hlaunch version --json`,
		"hlaunch completion": `  source <(hlaunch completion bash)
  hlaunch completion zsh > "${fpath[1]}/_hlaunch"
  hlaunch completion fish > ~/.config/fish/completions/hlaunch.fish`,
	}
}

// addExamples sets each command's Example from the table; the completion command is made later by cobra
// and gets its entry in finishCompletion.
func addExamples(root *cobra.Command) {
	for _, c := range root.Commands() {
		if ex, ok := examples()[c.CommandPath()]; ok {
			c.Example = ex
		}
	}
}

// finishCompletion gives cobra's completion command an example and hlaunch's argument errors (exit 125,
// naming the shells), and its shell subcommands examples of their own.
func finishCompletion(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Example = examples()["hlaunch completion"]
		var shells []string
		for _, sh := range c.Commands() {
			shells = append(shells, sh.Name())
			sh.Example = "  hlaunch completion " + sh.Name()
		}
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return invalidf("completion: unknown shell %s: want one of %s", quote(args[0]), strings.Join(shells, ", "))
			}
			return nil
		}
		c.RunE = func(cmd *cobra.Command, args []string) error {
			return invalidf("completion: name a shell: %s", strings.Join(shells, ", "))
		}
	}
}
