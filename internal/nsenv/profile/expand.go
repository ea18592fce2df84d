package profile

import (
	"os/user"
	"strings"
)

// expandHermesHome expands $HERMES_HOME's value as hermes does, expanduser(expandvars(v)): first every
// $NAME and ${NAME} the environment holds, then a leading ~ or ~user. getenv is the launcher's environment
// lookup; home is the OS home, used for ~ when the environment has no HOME.
func expandHermesHome(v string, getenv func(string) string, home string) string {
	return expandUser(expandVars(v, getenv), getenv, home)
}

// expandVars is Python's posixpath.expandvars: $NAME (NAME a run of ASCII letters, digits and '_') and
// ${NAME} (anything up to the first '}') are replaced by the variable's value. A variable the environment
// does not hold is left as it is, and so is a '$' that starts neither form. One nuance: getenv cannot tell
// an empty variable from a missing one, so an empty one is left as it is too (Python replaces it by "").
func expandVars(s string, getenv func(string) string) string {
	if getenv == nil || !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		name, end := varAt(s, i)
		if end < 0 {
			b.WriteByte(s[i])
			i++
			continue
		}
		if v := getenv(name); name != "" && v != "" {
			b.WriteString(v)
		} else {
			b.WriteString(s[i:end])
		}
		i = end
	}
	return b.String()
}

// varAt parses a $NAME or ${NAME} reference at s[i:], returning the name and where the reference ends, or
// end -1 when none starts there.
func varAt(s string, i int) (name string, end int) {
	if s[i] != '$' || i+1 >= len(s) {
		return "", -1
	}
	if s[i+1] == '{' {
		c := strings.IndexByte(s[i+2:], '}')
		if c < 0 {
			return "", -1
		}
		return s[i+2 : i+2+c], i + 3 + c
	}
	end = i + 1
	for end < len(s) && isWordByte(s[end]) {
		end++
	}
	if end == i+1 {
		return "", -1
	}
	return s[i+1 : end], end
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// expandUser is Python's posixpath.expanduser: a leading "~" (up to the first '/') is $HOME, else home;
// a leading "~name" is that user's home from the user database. Anything else, or a user that does not
// exist, is left as it is.
func expandUser(s string, getenv func(string) string, home string) string {
	if !strings.HasPrefix(s, "~") {
		return s
	}
	i := strings.IndexByte(s, '/')
	if i < 0 {
		i = len(s)
	}
	var dir string
	if i == 1 {
		if getenv != nil {
			dir = getenv("HOME")
		}
		if dir == "" {
			dir = home
		}
		if dir == "" {
			return s
		}
	} else {
		u, err := user.Lookup(s[1:i])
		if err != nil {
			return s
		}
		dir = u.HomeDir
	}
	out := strings.TrimRight(dir, "/") + s[i:]
	if out == "" {
		return "/"
	}
	return out
}
