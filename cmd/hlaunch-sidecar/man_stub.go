//go:build !mangen

package main

import "github.com/spf13/cobra"

// buildCommands is empty in the installed binary: the manual-page generator (man.go) exists only with
// -tags mangen.
func buildCommands() []*cobra.Command { return nil }
