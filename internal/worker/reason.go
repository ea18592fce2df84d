package worker

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
	"github.com/hlaunch/hlaunch/internal/strictjson"
)

// reasonOf is one row of the reasons table: an error that wraps err has the sub-code reason and, when
// the fault is one spec field's, that field.
type reasonOf struct {
	err    error
	reason string
	field  string
}

// reasons is the one table of the sub-codes a JSON error carries beside its code (the sidecar's "reason"
// and "field", docs/sidecar.md "Errors"), most specific first.
func reasons() []reasonOf {
	return []reasonOf{
		{ErrKeyHeld, "key_held", "key"},
		{profile.ErrNoProfile, "unknown_profile", "profile"},
		{profile.ErrInvalidName, "bad_profile_name", "profile"},
		{profile.ErrReservedName, "reserved_profile", "profile"},
		{profile.ErrTombstoned, "deleted_profile", "profile"},
		{profile.ErrNotUTF8, "env_not_utf8", ""},
		{profile.ErrInvalidEntry, "env_bad_entry", ""},
		{profile.ErrUnreadable, "env_unreadable", ""},
		{profile.ErrBadAssignment, "bad_env", "env"},
		{profile.ErrRefusedInherit, "refused_inherit", "inherit"},
		{profile.ErrRefusedName, "refused_name", ""},
		{profile.ErrPassNotFound, "pass_not_found", "pass"},
		{profile.ErrNoRoot, "no_root", ""},
		{ErrDegraded, "no_placement", ""},
		{ErrNoSpace, "no_space", ""},
	}
}

// fieldPhrases sorts a FieldError (bad input in one setting) by what its sentence says, first match.
func fieldPhrases() []struct{ phrase, reason string } {
	return []struct{ phrase, reason string }{
		{"want a JSON", "bad_type"},
		{"not a duration", "bad_duration"},
		{"want a duration", "bad_duration"},
		{"want a size", "bad_size"},
		{"is required", "missing_field"},
		{"no command given", "missing_field"},
		{" need", "conflict"},
		{"contradicts", "conflict"},
		{"only makes sense", "conflict"},
	}
}

var keyInJSON = regexp.MustCompile(`(?:unknown|duplicate) key "([^"]*)"`)

// ErrorReason returns err's sub-code (reason) and the spec field at fault (field, a dotted path inside
// "limits"), each "" when none applies: a profile that does not exist ("unknown_profile", "profile"), a
// .env that is not UTF-8 or is a symbolic link ("env_not_utf8", "env_symlink"), an unknown or repeated
// key ("unknown_field", "duplicate_field" and the key), a value of the wrong JSON type ("bad_type"), a
// setting out of range ("bad_size", "bad_duration", "bad_value"), a held key ("key_held", "key").
func ErrorReason(err error) (reason, field string) {
	if err == nil {
		return "", ""
	}
	if errors.Is(err, profile.ErrSymlinkEscape) {
		if strings.Contains(err.Error(), ".env is a symbolic link") {
			return "env_symlink", ""
		}
		return "symlink", ""
	}
	for _, r := range reasons() {
		if errors.Is(err, r.err) {
			return r.reason, r.field
		}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "bad_type", strings.TrimPrefix(strings.TrimPrefix(te.Field, "."), "Spec.")
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		reason = "bad_value"
		for _, p := range fieldPhrases() {
			if strings.Contains(fe.Msg, p.phrase) {
				reason = p.reason
				break
			}
		}
		if strings.HasPrefix(fe.Msg, "no command given") {
			return reason, "argv"
		}
		return reason, firstField(fe.Msg)
	}
	if errors.Is(err, strictjson.ErrSyntax) {
		msg := err.Error()
		if m := keyInJSON.FindStringSubmatch(msg); m != nil {
			if strings.Contains(m[0], "unknown") {
				return "unknown_field", m[1]
			}
			return "duplicate_field", m[1]
		}
		return "bad_json", ""
	}
	if errors.Is(err, ErrInvalid) {
		return "", firstField(err.Error())
	}
	return "", ""
}

// firstField is the spec field of the first flag msg names, or "".
func firstField(msg string) string {
	msg = strings.Replace(msg, "-p/--profile", "--profile", 1)
	for _, w := range strings.Fields(msg) {
		core := strings.TrimRight(w, ",;:.)")
		for _, s := range Settings() {
			if s.Flag != "" && core == s.Flag {
				return s.Field
			}
		}
	}
	return ""
}
