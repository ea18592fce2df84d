// Package hermestest holds hermes' built-in name lists as docs/hermes-contract.md states
// them, word for word, for tests: internal/nsenv/profile's unit tests check DefaultPolicy against them, and the
// integration suite puts every name into a real profile and checks what reaches the child. Kept apart
// from internal/nsenv/profile's own lists so that a list drifting from hermes fails a test instead of changing both.
package hermestest

import (
	_ "embed"
	"strings"
)

//go:embed names.txt
var namesFile string

// Tier1 returns the contract's Tier-1 names and names its prefix-and-suffix rules match.
func Tier1() []string { return section("tier1") }

// Tier2 returns the contract's static Tier-2 names.
func Tier2() []string { return section("tier2") }

// section returns the names of "[name]" in names.txt ('#' starts a comment line).
func section(name string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(namesFile, "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			in = line == "["+name+"]"
		case in:
			out = append(out, strings.Fields(line)...)
		}
	}
	return out
}
