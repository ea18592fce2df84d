package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hlaunch/hlaunch/internal/version"
)

// Every command a user can reach shows examples in its --help and manual page.
func TestEveryCommandHasExamples(t *testing.T) {
	root := newRootCmd(&app{relay: nil})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s: no examples (cmd/hlaunch/examples.go)", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// A mistyped command is reported as a command with a suggestion, also when flags for the intended command
// follow it (`hlaunch exce -p b` is not "unknown shorthand flag: 'p'").
func TestMistypedCommandSuggests(t *testing.T) {
	for _, args := range [][]string{
		{"exce", "-p", "b", "--", "true"},
		{"--root", "/nonexistent", "exce", "-p", "b"},
		{"exce"},
		{"--json=false", "stauts", "w-1"},
	} {
		code, out, errOut := runCLI(t, "", args...)
		want := map[string]string{"exce": `did you mean "exec"?`, "stauts": `did you mean "status"?`}
		word := "exce"
		if strings.Contains(strings.Join(args, " "), "stauts") {
			word = "stauts"
		}
		if code != 125 || out != "" || strings.Count(errOut, "\n") != 1 ||
			!strings.Contains(errOut, `unknown command "`+word+`"`) || !strings.Contains(errOut, want[word]) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 125 and one line suggesting the command", args, code, out, errOut)
		}
	}
	// A word that resembles nothing lists the commands instead.
	code, _, errOut := runCLI(t, "", "zzzzzz")
	if code != 125 || !strings.Contains(errOut, "want one of ") || !strings.Contains(errOut, "exec") {
		t.Errorf("zzzzzz: exit %d, stderr %q; want the list of commands", code, errOut)
	}
}

// --version, `version` and `version --json` report the one version of internal/version.
func TestVersionFlagAndCommand(t *testing.T) {
	code, out, _ := runCLI(t, "", "--version")
	if code != 0 || out != "hlaunch "+version.Version+"\n" {
		t.Errorf("--version: exit %d, %q; want %q", code, out, "hlaunch "+version.Version+"\n")
	}
	code, out, _ = runCLI(t, "", "version", "--json")
	var v version.Info
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Version != version.Version || v.Go == "" {
		t.Errorf("version --json: exit %d, %q (%v)", code, out, err)
	}
}

// `completion bash|zsh|fish` print a script; an unknown shell is exit 125 naming the shells.
func TestCompletionCommand(t *testing.T) {
	for sh, marker := range map[string]string{"bash": "complete -o default", "zsh": "#compdef hlaunch", "fish": "complete -c hlaunch"} {
		code, out, errOut := runCLI(t, "", "completion", sh)
		if code != 0 || !strings.Contains(out, marker) {
			t.Errorf("completion %s: exit %d, stderr %q, %d bytes without %q", sh, code, errOut, len(out), marker)
		}
	}
	code, _, errOut := runCLI(t, "", "completion", "tcsh")
	if code != 125 || !strings.Contains(errOut, `unknown shell "tcsh"`) || !strings.Contains(errOut, "bash") {
		t.Errorf("completion tcsh: exit %d, %q", code, errOut)
	}
}

// The help names what an installed system has (manual pages), never a file of the source tree.
func TestHelpNamesNoSourceFiles(t *testing.T) {
	root := newRootCmd(&app{})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, text := range []string{c.Short, c.Long, c.Example} {
			if strings.Contains(text, "docs/") || strings.Contains(text, "contrib/") || strings.Contains(text, ".md") {
				t.Errorf("%s: help names a source file: %q", c.CommandPath(), text)
			}
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "docs/") {
				t.Errorf("%s --%s: usage names a source file", c.CommandPath(), f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// JSON answers are not HTML-escaped: a message with <, > or & reads as written.
func TestJSONErrorNotHTMLEscaped(t *testing.T) {
	_, out, _ := runCLI(t, "", "--json", "status", "<w&1>")
	if strings.Contains(out, `\u003c`) || strings.Contains(out, `\u0026`) {
		t.Errorf("JSON error is HTML-escaped: %s", out)
	}
}

// hlaunch itself must not link the HTTP stack, TLS, protobuf or Prometheus: every hlaunch process (the
// CLI, each init stub and shim) would pay their package init (ADR 0006). The sidecar's binary has them.
func TestHlaunchDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/hlaunch/hlaunch/cmd/hlaunch").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{"net/http", "crypto/tls", "google.golang.org/protobuf", "github.com/prometheus/",
		"github.com/spf13/cobra/doc", "github.com/cpuguy83/go-md2man"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, strings.TrimSuffix(f, "/")+"/") {
				t.Errorf("cmd/hlaunch depends on %s", dep)
			}
		}
	}
}

// A sidecar example starts it at the default socket, whose directory it makes: an explicit --socket must
// be in a directory that exists, and /run/hlaunch does not until a sidecar made it (exit 125).
func TestSidecarExamplesUseTheDefaultSocket(t *testing.T) {
	for _, line := range strings.Split(examples()["hlaunch sidecar"], "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "hlaunch sidecar ") && strings.Contains(line, "--socket ") {
			t.Errorf("hlaunch sidecar example gives --socket: %q", line)
		}
	}
}

// --json is refused by the commands whose output has no JSON form (events, completion), as one JSON error
// naming the flag, exit 125, with nothing printed or run, rather than accepted and ignored.
func TestJSONRefusedWithoutJSONForm(t *testing.T) {
	for _, args := range [][]string{
		{"events", "--json"},
		{"--json", "events", "--since", "0"},
		{"completion", "bash", "--json"},
		{"--json", "completion", "zsh"},
		{"completion", "--json"},
	} {
		code, out, errOut := runCLI(t, "", args...)
		var e jsonError
		if err := json.Unmarshal([]byte(out), &e); code != 125 || err != nil || strings.Count(out, "\n") != 1 ||
			e.Error.Code != "invalid" || !strings.Contains(e.Error.Message, "--json") || errOut != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 125 and one JSON error naming --json", args, code, out, errOut)
		}
	}
}
