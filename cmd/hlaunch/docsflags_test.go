package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cliSections splits docs/cli.md into its "## `hlaunch CMD ...`" sections, by command path ("hlaunch exec").
func cliSections(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	head := regexp.MustCompile("(?m)^## `(hlaunch(?: [a-z]+)?)")
	out := map[string]string{}
	locs := head.FindAllStringSubmatchIndex(string(b), -1)
	for i, l := range locs {
		end := len(b)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		name := string(b[l[2]:l[3]])
		out[name] += string(b[l[0]:end])
	}
	return out
}

// flagTokens are the --flags a text mentions.
func flagTokens(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:^|[^-\w])--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// Every command's flags are in its section of docs/cli.md, and every flag docs/cli.md names exists (the
// sidecar's section is checked against hlaunch-sidecar's own flags, in that package).
func TestDocsCLIFlagsMatchCommands(t *testing.T) {
	root := newRootCmd(&app{})
	sections := cliSections(t)
	known := map[string]bool{"help": true, "version": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { known[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { known[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, c := range root.Commands() {
		if !c.IsAvailableCommand() || c.Name() == "sidecar" {
			continue
		}
		path := c.CommandPath()
		sec, ok := sections[path]
		if !ok {
			t.Errorf("docs/cli.md has no section \"## `%s ...`\"", path)
			continue
		}
		var walkFlags func(c *cobra.Command)
		walkFlags = func(c *cobra.Command) {
			c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden && f.Name != "help" && !strings.Contains(sec, "--"+f.Name) {
					t.Errorf("docs/cli.md, %s: flag --%s is not documented", path, f.Name)
				}
			})
			for _, sub := range c.Commands() {
				walkFlags(sub)
			}
		}
		walkFlags(c)
	}
	b, _ := os.ReadFile("../../docs/cli.md")
	whole := string(b)
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(whole, "--"+f.Name) {
			t.Errorf("docs/cli.md: global flag --%s is not documented", f.Name)
		}
	})
	var unknown []string
	for name, sec := range sections {
		if name == "hlaunch sidecar" {
			continue
		}
		for f := range flagTokens(sec) {
			if !known[f] {
				unknown = append(unknown, name+": --"+f)
			}
		}
	}
	slices.Sort(unknown)
	for _, u := range unknown {
		t.Errorf("docs/cli.md names a flag no hlaunch command has: %s", u)
	}
}

// The help of the flags a new user reads first says what the code does, as docs/cli.md does: the cgroup
// namespace a sandboxed worker gets (sandbox.Enter), the shim's rotation of a detached worker's log, the
// last fallback of the state directory (launcher's defaultStateDir), and a policy format that is written
// down where the help points.
func TestExecHelpAgreesWithDocs(t *testing.T) {
	root := newRootCmd(&app{})
	exec, _, err := root.Find([]string{"exec"})
	if err != nil {
		t.Fatal(err)
	}
	usage := func(name string) string {
		f := exec.Flags().Lookup(name)
		if f == nil {
			f = root.PersistentFlags().Lookup(name)
		}
		if f == nil {
			t.Fatalf("no flag --%s", name)
		}
		return f.Usage
	}
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	cli := string(b)
	for _, tc := range []struct{ flag, want, docs string }{
		{"sandbox", "cgroup namespaces", "new mount, pid, ipc, uts and cgroup namespaces"},
		{"log", "with --detach, while the worker runs", "with `--detach`, while the worker runs"},
		{"state-dir", "else $TMPDIR/hlaunch-<uid>", "else\n  `$TMPDIR/hlaunch-<uid>`"},
		{"policy", `share/doc/hlaunch/cli.md, "The policy file"`, "\n## The policy file"},
	} {
		if !strings.Contains(usage(tc.flag), tc.want) {
			t.Errorf("--%s help %q, want it to say %q", tc.flag, usage(tc.flag), tc.want)
		}
		if !strings.Contains(cli, tc.docs) {
			t.Errorf("docs/cli.md does not say %q (for --%s)", tc.docs, tc.flag)
		}
	}
}
