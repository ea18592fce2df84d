package worker

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// Setting is one launch setting under its two names: the exec flag and the --spec / sidecar JSON field
// (a dotted path inside "limits"). The names differ where a flag reads better on a command line: --as is
// the field user, --user is user_manager.
type Setting struct {
	Flag  string // "--memory"; "" for argv, which is the command line's tail
	Field string // "limits.memory"
}

// Settings is the table of every Spec setting's flag and field, in the order of the Spec. It is the one
// place the two namings meet: FieldError uses it, docs/schema/spec.schema.json documents it, and a test
// keeps all three in step with the Spec's JSON tags.
func Settings() []Setting {
	return []Setting{
		{"--profile", "profile"}, {"", "argv"}, {"--cwd", "cwd"}, {"--env", "env"}, {"--inherit", "inherit"},
		{"--secrets", "secrets"}, {"--pass", "pass"}, {"--scope", "scope"}, {"--require-scope", "require_scope"},
		{"--unit", "unit"}, {"--user", "user_manager"}, {"--slice", "slice"}, {"--cgroup-parent", "cgroup_parent"},
		{"--memory", "limits.memory"}, {"--memory-high", "limits.memory_high"}, {"--pids", "limits.pids"},
		{"--cpu-weight", "limits.cpu_weight"}, {"--cpus", "limits.cpus"}, {"--sandbox", "sandbox"},
		{"--net", "net"}, {"--seccomp", "seccomp"}, {"--rw", "rw"}, {"--as", "user"}, {"--tty-titles", "tty_titles"},
		{"--key", "key"},
		{"--timeout", "timeout"}, {"--grace", "grace"}, {"--log", "log"}, {"--log-max", "log_max"},
		{"--stdio", "stdio"}, {"--detach", "detach"},
	}
}

// FieldError is bad input in launch settings, found by Spec.Validate: Error() names the exec flags
// ("--timeout \"10\": not a duration ..."), SpecMessage the same sentence with the spec fields, as the
// sidecar answers a JSON spec. It unwraps to ErrInvalid (exit 125, code "invalid").
type FieldError struct {
	Msg string // the sentence, naming flags
}

// Error is the sentence naming flags, after ErrInvalid's lead.
func (e *FieldError) Error() string { return ErrInvalid.Error() + ": " + e.Msg }

// Unwrap is ErrInvalid: bad input, exit 125.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// SpecMessage is the sentence with every flag replaced by its spec field; the first one leads as
// "spec field NAME".
func (e *FieldError) SpecMessage() string { return specWords(e.Msg) }

// specWords is msg with every flag word replaced by its spec field, the first one as "spec field NAME";
// a message that names no flag is returned as it is.
func specWords(msg string) string {
	msg = strings.Replace(msg, "-p/--profile", "--profile", 1)
	words := strings.Fields(msg)
	first := true
	for i, w := range words {
		// A flag may stand in punctuation: "(--as 0:0 for root)", "[--pids]", "`--key`", "--log,".
		lead := len(w) - len(strings.TrimLeftFunc(w, notFlagRune))
		core := strings.TrimRightFunc(w[lead:], notFlagRune)
		for _, s := range Settings() {
			if s.Flag == "" || core != s.Flag {
				continue
			}
			name := s.Field
			if first {
				name = "spec field " + name
				first = false
			}
			words[i] = w[:lead] + name + w[lead+len(core):]
			break
		}
	}
	out := strings.Join(words, " ")
	if first {
		return msg // names no flag: "no command given" reads the same for both
	}
	return out
}

// notFlagRune is punctuation around a flag word: anything but the letters, digits and dashes a flag is
// made of.
func notFlagRune(r rune) bool {
	return r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

// SpecMessage is err's message as the sidecar gives it for a JSON spec: a FieldError's sentence with spec
// fields; anything else is err.Error() without the "invalid launch: " lead, with every flag it names
// (a held --key, a detached worker's --pids, a --log that cannot be opened) worded as its spec field.
func SpecMessage(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.SpecMessage()
	}
	return specWords(strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
}

// DurationAccepted is what every duration setting takes, for its error line.
const DurationAccepted = "want a duration such as 500ms, 30s or 10m"

// ParseDuration parses a duration setting (a flag, a spec field, a query parameter) in Go's syntax, not
// negative. Its error is the phrase that follows the setting's name and value: "not a duration (want a
// duration such as 500ms, 30s or 10m)"; "" is not a duration here (callers treat empty as unset).
func ParseDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("not a duration (%s)", DurationAccepted)
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative (%s)", DurationAccepted)
	}
	return d, nil
}

// DurationFlag is a duration flag (a pflag.Value of type "duration") parsed by ParseDuration, so that a
// flag takes exactly what every other duration setting takes (Go's syntax, not negative); Set's error is
// ParseDuration's phrase.
type DurationFlag struct{ D *time.Duration }

// NewDurationFlag is a DurationFlag writing into p, which starts at def (the flag's default).
func NewDurationFlag(p *time.Duration, def time.Duration) DurationFlag {
	*p = def
	return DurationFlag{D: p}
}

// Set parses v into *f.D.
func (f DurationFlag) Set(v string) error {
	d, err := ParseDuration(v)
	if err != nil {
		return err
	}
	*f.D = d
	return nil
}

// String is the current value in Go's form ("24h0m0s"), as a flag's default is shown.
func (f DurationFlag) String() string {
	if f.D == nil {
		return time.Duration(0).String()
	}
	return f.D.String()
}

// Type is "duration", as pflag's own duration flags say.
func (f DurationFlag) Type() string { return "duration" }

// ParseDurationOr is ParseDuration for a setting that may be left out: "" is def.
func ParseDurationOr(v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	return ParseDuration(v)
}
