package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Every hlaunch-sidecar flag is in docs/cli.md's "hlaunch sidecar" section, and every flag that section
// names exists (as a sidecar flag, or as one of exec's it refers to).
func TestDocsCLISidecarFlags(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "## `hlaunch sidecar")
	if start < 0 {
		t.Fatal("docs/cli.md has no hlaunch sidecar section")
	}
	sec := doc[start:]
	if end := strings.Index(sec[3:], "\n## "); end >= 0 {
		sec = sec[:end+3]
	}
	cmd := newSidecarCmd()
	known := map[string]bool{"help": true, "version": true}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		known[f.Name] = true
		if f.Name != "help" && !f.Hidden && !strings.Contains(sec, "--"+f.Name) {
			t.Errorf("docs/cli.md, hlaunch sidecar: --%s is not documented", f.Name)
		}
	})
	for _, m := range regexp.MustCompile(`(?:^|[^-\w])--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(sec, -1) {
		if !known[m[1]] {
			t.Errorf("docs/cli.md, hlaunch sidecar names --%s, which hlaunch-sidecar does not have", m[1])
		}
	}
}

// The examples start the sidecar at the default socket, whose directory it makes: an explicit --socket
// must be in a directory that exists, and /run/hlaunch does not until a sidecar made it (exit 125).
func TestExamplesUseTheDefaultSocket(t *testing.T) {
	for _, line := range strings.Split(newSidecarCmd().Example, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "hlaunch sidecar ") && strings.Contains(line, "--socket ") {
			t.Errorf("example gives --socket: %q", line)
		}
	}
}
