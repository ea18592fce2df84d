package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// A flag error of hlaunch-sidecar is worded as hlaunch words it (internal/flagerr): one line naming the
// flag and what it accepts, no parser internals (strconv.ParseInt, "for \"--warm\" flag"), exit 125.
func TestSidecarFlagErrorsWordedAsHlaunch(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--warm", "x"}, `sidecar: --warm "x": want a whole number`},
		{[]string{"--max-body"}, `sidecar: --max-body needs a value: a whole number`},
		{[]string{"--wram", "2"}, `sidecar: unknown flag --wram; did you mean --warm? (see hlaunch-sidecar --help)`},
		{[]string{"--gc-interval", "-1s"}, `sidecar: --gc-interval "-1s": must not be negative`},
		{[]string{"events", "--bogus"}, `sidecar: events: unknown flag --bogus (see hlaunch-sidecar events --help)`},
	} {
		cmd := newSidecarCmd()
		cmd.SetArgs(c.args)
		err := cmd.Execute()
		if !errors.Is(err, worker.ErrInvalid) || worker.ExitCode(err) != worker.ExitInternal {
			t.Fatalf("%v: %v, want ErrInvalid (exit 125)", c.args, err)
		}
		msg := strings.TrimPrefix(err.Error(), worker.ErrInvalid.Error()+": ")
		if !strings.HasPrefix(msg, c.want) || strings.Contains(msg, "\n") || strings.Contains(msg, "strconv") || strings.Contains(msg, `" flag`) {
			t.Errorf("%v:\n got  %q\n want %q", c.args, msg, c.want)
		}
	}
}
