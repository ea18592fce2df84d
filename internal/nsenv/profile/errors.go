package profile

import "errors"

// Sentinel errors, wrapped with %w by every function of this package; the wrapping message names the file,
// flag or name at fault. All of them mean "bad input, nothing may be started" (exit 125 in the CLI).
var (
	// ErrInvalidName: a profile name outside the hermes grammar ^[a-z0-9][a-z0-9_-]{0,63}$ (after strip and
	// lower-casing). Refused before any path is built, so "../x" never reaches the file system.
	ErrInvalidName = errors.New("invalid profile name")
	// ErrReservedName: a name hermes reserves (hermes test tmp root sudo) used as a profile name.
	ErrReservedName = errors.New("reserved profile name")
	// ErrNoProfile: the profile's home does not exist (or is not a directory). Never a fallback to another home.
	ErrNoProfile = errors.New("profile does not exist")
	// ErrTombstoned: the profile was deleted; hermes leaves <root>/profiles/.deleted/<name> behind.
	ErrTombstoned = errors.New("profile was deleted")
	// ErrSymlinkEscape: a home, the profiles directory, a path on the way to them or a .env is a symbolic
	// link. Nothing below the hermes root is followed through a link: a worker could re-point one between
	// a check and the open.
	ErrSymlinkEscape = errors.New("symbolic link refused")
	// ErrBadAssignment: a --env value that is not NAME=VALUE (or has an invalid name or a NUL byte).
	ErrBadAssignment = errors.New("malformed assignment")
	// ErrRefusedInherit: an --inherit name the policy never lets through from the launcher (a credential,
	// a launch-profile setting, a profile gate, or a Tier-1 name).
	ErrRefusedInherit = errors.New("refused to inherit")
	// ErrRefusedName: a --env or --pass name the policy never lets into a child (Tier-1, or a name that
	// fixes the child's identity such as HERMES_HOME).
	ErrRefusedName = errors.New("refused by policy")
	// ErrPassNotFound: a --pass name that the target profile's .env does not hold.
	ErrPassNotFound = errors.New("not in the profile's .env")
	// ErrPolicy: a policy file that is not valid JSON or holds an unknown key.
	ErrPolicy = errors.New("invalid policy")
	// ErrUnreadable: a .env (or policy file) that exists but cannot be read as a regular file.
	ErrUnreadable = errors.New("unreadable file")
	// ErrNotUTF8: a .env that is not valid UTF-8 (after a leading BOM). hermes reads such a file as an
	// empty map; the launcher refuses it, naming the file and the byte offset, rather than re-encode it.
	ErrNotUTF8 = errors.New("not UTF-8")
	// ErrInvalidEntry: a .env entry that cannot be put into an environ (a NUL byte in its name or value).
	ErrInvalidEntry = errors.New("invalid .env entry")
	// ErrInvalidRequest: a Request that cannot be composed (no profile, an unknown secrets mode).
	ErrInvalidRequest = errors.New("invalid environ request")
	// ErrNoRoot: no hermes root can be resolved (no --root, no HLAUNCH_ROOT, no HERMES_HOME, no user home).
	ErrNoRoot = errors.New("no hermes root")
)

// wordedError is a message that says what its sentinel says in its own words ("profile 'x' does not
// exist"), so the sentinel's text is not repeated after it; errors.Is still finds the sentinel.
type wordedError struct {
	msg  string
	errs []error
}

func worded(msg string, errs ...error) error { return &wordedError{msg, errs} }

func (e *wordedError) Error() string   { return e.msg }
func (e *wordedError) Unwrap() []error { return e.errs }
