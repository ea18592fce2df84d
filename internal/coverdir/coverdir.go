//go:build !hlaunchcover

package coverdir

import "os"

// Counters is a role's counters file, opened before the role gives up its file access; nil (every build
// but a cover build) writes nothing.
type Counters struct{}

// Open opens this process's counters file in a cover build; elsewhere it returns nil.
func Open() *Counters { return nil }

// Flush writes the counters so far; on nil it does nothing.
func (*Counters) Flush() {}

// Exit flushes the counters and ends the process with code; on nil it is os.Exit.
func (*Counters) Exit(code int) { os.Exit(code) }
