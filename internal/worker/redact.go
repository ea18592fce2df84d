package worker

import (
	"fmt"
	"strings"

	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
)

// RedactArgv hides credential values in an argv kept in receipts and the ledger: NAME=VALUE where NAME is
// a credential, --flag=VALUE and "--flag VALUE" where the flag names one (--token, --api-key, --apikey,
// --passwd, ...), the credentials of an HTTP header ("Authorization: Bearer x", "X-Api-Key: x", as curl
// -H takes them) and the password of a URL ("https://user:pw@host").
func RedactArgv(argv []string, pol *profile.Policy) []string {
	out := make([]string, len(argv))
	secretNext := false
	for i, a := range argv {
		switch {
		case secretNext:
			out[i], secretNext = "***", false
			continue
		case i == 0:
			out[i] = a
			continue
		}
		if h, ok := redactHeader(a, pol); ok {
			out[i] = h
			continue
		}
		a = redactURLPassword(a)
		name, _, hasValue := strings.Cut(a, "=")
		flag := strings.TrimLeft(name, "-")
		key := strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
		secret := key != "" && (pol.IsCredential(key) || pol.IsCredential("X_"+key) || squashedSecret(key))
		switch {
		case secret && hasValue:
			out[i] = name + "=***"
		case secret && strings.HasPrefix(name, "-"):
			out[i], secretNext = a, true
		default:
			out[i] = a
		}
	}
	return out
}

// squashedSecret reports flag names that spell a credential without the '_' the suffix rules need.
func squashedSecret(key string) bool {
	switch key {
	case "APIKEY", "PASSWD", "PASSWORD", "SECRET", "TOKEN", "AUTH":
		return true
	}
	return false
}

// redactHeader hides the value of "Name: value" when Name is Authorization, Proxy-Authorization, Cookie
// or a credential-shaped name (X-Api-Key); ok is false when a is no such header.
func redactHeader(a string, pol *profile.Policy) (string, bool) {
	name, _, ok := strings.Cut(a, ":")
	if !ok || name == "" || strings.ContainsAny(name, " /=") {
		return "", false
	}
	key := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	switch {
	case key == "AUTHORIZATION" || key == "PROXY_AUTHORIZATION" || key == "COOKIE", pol.IsCredential(key), pol.IsCredential("X_" + key):
		return name + ": ***", true
	}
	return "", false
}

// redactURLPassword replaces the password of scheme://user:password@host with ***.
func redactURLPassword(a string) string {
	scheme := strings.Index(a, "://")
	if scheme < 0 {
		return a
	}
	rest := a[scheme+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return a
	}
	user, _, hasPw := strings.Cut(rest[:at], ":")
	if !hasPw {
		return a
	}
	return a[:scheme+3] + user + ":***" + rest[at:]
}

// MaxRecordedArgv is how many bytes of a detached worker's argv its record and ledger entry keep: the
// retention counts records (1,000 ended workers, 10,000 ledger entries, by default under /run), not bytes,
// and an argv may be most of a sidecar request's 1 MiB body.
const MaxRecordedArgv = 4 << 10

// RecordedArgv is argv as a record keeps it: whole when its arguments hold at most MaxRecordedArgv bytes,
// else the leading arguments that fit in them, then one element saying what was left out. The worker
// itself runs with its whole argv.
func RecordedArgv(argv []string) []string {
	total := 0
	for _, a := range argv {
		total += len(a)
	}
	if total <= MaxRecordedArgv {
		return argv
	}
	kept, n := 0, 0
	for _, a := range argv {
		if n+len(a) > MaxRecordedArgv {
			break
		}
		n += len(a)
		kept++
	}
	out := append(argv[:kept:kept], fmt.Sprintf("...(%d more arguments, %d bytes, not recorded)", len(argv)-kept, total-n))
	return out
}
