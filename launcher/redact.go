package launcher

import (
	"strings"

	"github.com/hlaunch/hlaunch/nsenv"
)

// redactArgv hides credential values in an argv kept in receipts and the ledger: NAME=VALUE where NAME is
// a credential, --flag=VALUE and "--flag VALUE" where the flag names one (--token, --api-key, ...).
func redactArgv(argv []string, pol *nsenv.Policy) []string {
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
		name, _, hasValue := strings.Cut(a, "=")
		flag := strings.TrimLeft(name, "-")
		key := strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
		secret := key != "" && (pol.IsCredential(key) || pol.IsCredential("X_"+key))
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
