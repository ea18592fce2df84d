// Package terminal gives a foreground worker the caller's terminal without handing it over: a worker that
// must not be in the caller's session (sandboxed, or of another uid) gets a pty of its own whose master
// the launcher relays to the caller's terminal (pty.go, through internal/termfilter), and the caller's
// terminal is made the worker's foreground and taken back after it (terminal.go). It also refuses a
// terminal as the inherited stdio of a detached worker, which has no relay (CheckInherited).
package terminal
