package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/launchflag"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// app is one invocation: the global flags and the process's streams. It lives only as long as run.
type app struct {
	dirs launchflag.Dirs // --root, --state-dir, --ledger-dir, --policy
	json bool            // --json

	// args is the command line, for the root's flag errors (a mistyped command; see firstCommandWord).
	args []string

	// relay holds the forwarded signals from the top of run when the command line names exec; exec claims
	// it in the foreground, every other path releases it (see relay).
	relay *relay

	stdin          *os.File
	stdout, stderr *os.File
}

// run executes one hlaunch command line and returns the process exit code.
func run(args []string, stdin, stdout, stderr *os.File) int {
	a := &app{args: args, stdin: stdin, stdout: stdout, stderr: stderr, relay: startRelay(args)}
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(context.Background())
	// A command line cobra refused, or an exec that failed before its launch, never reached a release.
	a.settleRelay(false)
	return a.finish(err)
}

// finish turns a command's error into the exit code, printing the one error line (or JSON object).
func (a *app) finish(err error) int {
	if err == nil {
		return worker.ExitOK
	}
	var st exitStatus
	if errors.As(err, &st) {
		return int(st)
	}
	code, name := exitCodeFor(err)
	msg := message(err)
	if a.json {
		// With --json every answer, errors included, is one JSON document on stdout, so a caller that
		// parses stdout never has to look anywhere else.
		writeJSONError(a.stdout, name, msg)
	} else {
		fmt.Fprintf(a.stderr, "hlaunch: %s\n", msg)
	}
	return code
}

// message is the one line shown for err. The launcher's "invalid launch: " lead is dropped: exit 125 and
// the code "invalid" already say it, and the rest of the line names the flag or file at fault. A message
// that still holds a control character (one naming a file or value a worker chose) is shown quoted.
func message(err error) string {
	return printableLine(oneLine(strings.TrimPrefix(err.Error(), worker.ErrInvalid.Error()+": ")))
}

// jsonError is the shape of an error with --json; the sidecar answers with the same object.
type jsonError struct {
	Error jsonErrorBody `json:"error"`
}

type jsonErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeJSONError writes {"error":{"code":...,"message":...}} as one line.
func writeJSONError(w io.Writer, code, msg string) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // a message naming "<id>" or "a&b" is shown as written
	_ = enc.Encode(jsonError{Error: jsonErrorBody{Code: code, Message: oneLine(msg)}})
}

// oneLine folds a multi-line message so that an error is always exactly one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), "; ")
}

// newLauncher builds the launcher from the global flags.
func (a *app) newLauncher() (*launcher.Launcher, error) {
	return launcher.New(a.config())
}

// config is the launcher.Config the global flags describe.
func (a *app) config() launcher.Config {
	cfg := a.dirs.Config()
	cfg.Stderr = a.stderr
	return cfg
}

// interruptible returns a context that ends on SIGINT or SIGTERM, so that a blocking read command (wait,
// stop) gives up cleanly instead of dying mid-write.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
}

// printJSON writes v as indented JSON on w.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// noArgs and exactArgs replace cobra's argument checks so that their errors map to exit 125 / "invalid".
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return invalidf("%sunexpected argument %q", cmdPrefix(cmd), args[0])
	}
	return nil
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return invalidf("%swant %s, got %d arguments", cmdPrefix(cmd), what, len(args))
		}
		return nil
	}
}
