//go:build !mangen

package main

import "github.com/spf13/cobra"

// buildCommands is empty in the installed binary: the manual-page generator (man.go) exists only with
// -tags mangen, so that cobra's doc and the roff renderer are not linked into every hlaunch process.
func buildCommands(*app) []*cobra.Command { return nil }
