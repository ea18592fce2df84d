package access

import "strings"

// GeneratedScopeIn names the worker whose generated scope name is a component of the cgroup path cg, or "".
func GeneratedScopeIn(cg string) string {
	for _, c := range strings.Split(cg, "/") {
		if id, ok := GeneratedScope(c); ok {
			return id
		}
	}
	return ""
}

// GeneratedScope reports whether unit is a scope name hlaunch generates and gives the worker id in it.
func GeneratedScope(unit string) (string, bool) {
	rest, ok := strings.CutPrefix(unit, "hlaunch-")
	if !ok {
		return "", false
	}
	if rest, ok = strings.CutSuffix(rest, ".scope"); !ok || len(rest) < 12 {
		return "", false
	}
	hex := rest[len(rest)-12:]
	if len(rest) > 12 && rest[len(rest)-13] != '-' {
		return "", false
	}
	for _, c := range hex {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", false
		}
	}
	return "w-" + hex, true
}
