package worker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
	"github.com/hlaunch/hlaunch/internal/strictjson"
)

// TestErrorReason: the sub-code and field of each kind of refusal, from the one table.
func TestErrorReason(t *testing.T) {
	for _, tc := range []struct {
		err           error
		reason, field string
	}{
		{fmt.Errorf("%w: %w", ErrInvalid, fmt.Errorf("profile 'x': %w", profile.ErrNoProfile)), "unknown_profile", "profile"},
		{fmt.Errorf("%w: /h/.env: %w at byte 2", ErrInvalid, profile.ErrNotUTF8), "env_not_utf8", ""},
		{fmt.Errorf("%w: /h/.env is a symbolic link: %w", ErrInvalid, profile.ErrSymlinkEscape), "env_symlink", ""},
		{fmt.Errorf("%w: /h is a symbolic link: %w", ErrInvalid, profile.ErrSymlinkEscape), "symlink", ""},
		{fmt.Errorf("%w: spec: %w: unknown key \"limits.swap\" (keys are case-sensitive)", ErrInvalid, strictjson.ErrSyntax), "unknown_field", "limits.swap"},
		{fmt.Errorf("%w: spec: %w: duplicate key \"env.A\"", ErrInvalid, strictjson.ErrSyntax), "duplicate_field", "env.A"},
		{fmt.Errorf("%w: spec: %w: trailing data", ErrInvalid, strictjson.ErrSyntax), "bad_json", ""},
		{&FieldError{Msg: `--timeout "10": not a duration (want ...)`}, "bad_duration", "timeout"},
		{&FieldError{Msg: `--memory "lots": want a size in bytes`}, "bad_size", "limits.memory"},
		{&FieldError{Msg: "-p/--profile is required"}, "missing_field", "profile"},
		{&FieldError{Msg: "no command given (hlaunch exec -p NAME -- CMD [ARGS...])"}, "missing_field", "argv"},
		{&FieldError{Msg: "--net none needs --sandbox"}, "conflict", "net"},
		{&FieldError{Msg: "--cpu-weight 0: want 1..10000"}, "bad_value", "limits.cpu_weight"},
		{fmt.Errorf("%w: --key %q is held by worker w-1 (pid 2)", ErrKeyHeld, "k"), "key_held", "key"},
		{fmt.Errorf("%w: --pids 4: give at least 9", ErrInvalid), "", "limits.pids"},
		{ErrNotFound, "", ""},
	} {
		reason, field := ErrorReason(tc.err)
		if reason != tc.reason || field != tc.field {
			t.Errorf("%v: reason %q field %q, want %q %q", tc.err, reason, field, tc.reason, tc.field)
		}
	}
}

// TestSpecMessageNamesNoFlag: any error the sidecar answers is worded with spec fields, a FieldError or
// not: every flag of Settings, in any error, comes out as its field.
func TestSpecMessageNamesNoFlag(t *testing.T) {
	for _, s := range Settings() {
		if s.Flag == "" {
			continue
		}
		for _, err := range []error{
			&FieldError{Msg: s.Flag + " x: bad"},
			fmt.Errorf("%w: %s x: bad, see %s.", ErrInvalid, s.Flag, s.Flag),
			fmt.Errorf("%w: %s %q is held", ErrKeyHeld, s.Flag, "v"),
		} {
			msg := SpecMessage(err)
			for _, w := range strings.Fields(msg) {
				if strings.HasPrefix(w, "--") {
					t.Errorf("%v: %q names a flag", err, msg)
				}
			}
			if !strings.Contains(msg, "spec field "+s.Field) {
				t.Errorf("%v: %q does not lead with spec field %s", err, msg, s.Field)
			}
		}
	}
}
