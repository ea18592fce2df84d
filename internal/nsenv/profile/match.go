package profile

import "strings"

// nameSet matches names against a list of exact names and '*' globs. Built once per Compose call from a
// Policy (so a caller may still edit a Policy between calls), then only read.
type nameSet struct {
	exact map[string]struct{}
	globs []string
}

// newNameSet builds a set from lists; fold upper-cases entries for case-insensitive matching.
func newNameSet(fold bool, lists ...[]string) nameSet {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	s := nameSet{exact: make(map[string]struct{}, n)}
	for _, l := range lists {
		for _, e := range l {
			if fold {
				e = upperASCII(e)
			}
			if strings.IndexByte(e, '*') >= 0 {
				s.globs = append(s.globs, e)
			} else {
				s.exact[e] = struct{}{}
			}
		}
	}
	return s
}

// match reports whether name (already folded when the set is) is in the set.
func (s nameSet) match(name string) bool {
	if _, ok := s.exact[name]; ok {
		return true
	}
	for _, g := range s.globs {
		if patternMatch(g, name) {
			return true
		}
	}
	return false
}

// patternMatch applies a policy pattern (see Policy): one '*' is hermes' startswith-and-endswith test,
// in which the two parts may overlap; more are a glob.
func patternMatch(pattern, name string) bool {
	star := strings.IndexByte(pattern, '*')
	if star >= 0 && strings.IndexByte(pattern[star+1:], '*') < 0 {
		return strings.HasPrefix(name, pattern[:star]) && strings.HasSuffix(name, pattern[star+1:])
	}
	return globMatch(pattern, name)
}

// globMatch matches name against pattern, where '*' matches any run of bytes (possibly empty) and every
// other byte matches itself. Iterative with single backtracking: linear in practice, no recursion.
func globMatch(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matcher is a Policy compiled for lookups. Names passed to its methods must be upper-cased with
// upperASCII, except baseExact which is case-sensitive.
type matcher struct {
	tier1       nameSet
	credentials nameSet
	suffixes    []string
	gates       []string
	base        nameSet
	baseExact   nameSet
	launch      []string
	foreign     nameSet
}

// compile builds the matcher for p. A nil Policy compiles the defaults.
func (p *Policy) compile() *matcher {
	if p == nil {
		p = DefaultPolicy()
	}
	return &matcher{
		tier1:       newNameSet(true, p.Tier1, p.Tier1Patterns),
		credentials: newNameSet(true, p.Credentials),
		suffixes:    upperAll(p.CredentialSuffixes),
		gates:       upperAll(p.ProfileGateMarkers),
		base:        newNameSet(true, p.Base),
		baseExact:   newNameSet(false, p.Base),
		launch:      upperAll(p.LaunchSettingPrefixes),
		foreign:     newNameSet(true, p.ForeignAllow),
	}
}

// isASCII reports whether s holds only ASCII bytes, for which upperASCII is Python's str.upper().
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func upperAll(l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = upperASCII(s)
	}
	return out
}

// isTier1 is the Tier-1 test; a name outside ASCII is Tier 1 (see Policy.IsTier1).
func (m *matcher) isTier1(up string) bool { return !isASCII(up) || m.tier1.match(up) }

func (m *matcher) isCredential(up string) bool {
	if m.isTier1(up) || m.credentials.match(up) {
		return true
	}
	for _, s := range m.suffixes {
		if strings.HasSuffix(up, s) {
			return true
		}
	}
	return false
}

func (m *matcher) isLaunchSetting(up string) bool {
	for _, pre := range m.launch {
		if strings.HasPrefix(up, pre) {
			return true
		}
	}
	return false
}

// isProfileGate matches each marker anywhere in "_" + name + "_", so a marker at either end of the name
// (ALLOWED_USERS, DISCORD_ALLOWED) still counts.
func (m *matcher) isProfileGate(up string) bool {
	if len(m.gates) == 0 {
		return false
	}
	padded := "_" + up + "_"
	for _, g := range m.gates {
		if g != "" && strings.Contains(padded, g) {
			return true
		}
	}
	return false
}

// foreignAllowed reports whether a foreign .env may set up: a credential, a profile gate, or a name of the
// policy's foreign_allow list.
func (m *matcher) foreignAllowed(up string) bool {
	return m.isCredential(up) || m.isProfileGate(up) || m.foreign.match(up)
}
