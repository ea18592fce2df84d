package profile

import (
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/hermestest"
)

// TestTier1FollowsHermes: every Tier-1 name of the contract, in any ASCII case, and hermes' prefix and
// suffix rules, including the names where prefix and suffix share the '_'.
func TestTier1FollowsHermes(t *testing.T) {
	p := DefaultPolicy()
	for _, n := range hermestest.Tier1() {
		for _, v := range []string{n, strings.ToLower(n), strings.ToLower(n[:1]) + n[1:]} {
			if !p.IsTier1(v) {
				t.Errorf("%s is Tier 1 in hermes, not here", v)
			}
		}
	}
	yes := []string{
		"_HERMES_FORCE_X", "_HERMES_FORCE_", "AUXILIARY_API_KEY", "AUXILIARY_BASE_URL", "auxiliary_api_key",
		"AUXILIARY_VISION_API_KEY", "Auxiliary_web_base_url", "GATEWAY_RELAY_KEY", "GATEWAY_RELAY_TOKEN",
		"GATEWAY_RELAY_SECRET", "GATEWAY_RELAY_X_SECRET", "gateway_relay_token",
		// Outside ASCII: hermes' str.upper() makes these SUDO_PASSWORD and HERMES_DASHBOARD_SESSION_TOKEN.
		"\u017fudo_password", "HERMES_DASHBOARD_SE\u00dfION_TOKEN", "GH_TOKEN\u200b", "\u212aEY",
	}
	for _, n := range yes {
		if !p.IsTier1(n) {
			t.Errorf("%q: want Tier 1", n)
		}
	}
	no := []string{
		"AUXILIARY_API_KEYS", "AUXILIARY_", "AUXILIARY_URL", "GATEWAY_RELAY_", "GATEWAY_RELAY_IDS",
		"GATEWAY_RELAY_KEY_ID", "HERMES_FORCE_X", "GH_TOKENS", "X_GH_TOKEN", "SUDO_PASSWORD_HINT",
	}
	for _, n := range no {
		if p.IsTier1(n) {
			t.Errorf("%q: not Tier 1 in hermes", n)
		}
	}
}

// TestTier2FollowsHermes: every static Tier-2 name of the contract is a credential (stripped under
// --secrets none), in any ASCII case; a policy file can still add names.
func TestTier2FollowsHermes(t *testing.T) {
	p := DefaultPolicy()
	for _, n := range hermestest.Tier2() {
		if !p.IsCredential(n) || !p.IsCredential(strings.ToLower(n)) {
			t.Errorf("%s is a hermes Tier-2 name, not a credential here", n)
		}
	}
	for _, n := range []string{"PATH", "LANG", "B_MARKER", "TERMINAL_ENV", "LLM_MODELS"} {
		if p.IsCredential(n) {
			t.Errorf("%s: not a credential", n)
		}
	}
}

func TestPatternMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"A_*_B", "A_B", true}, {"A_*_B", "A_x_B", true}, {"A_*_B", "A_", false}, {"A_*_B", "AB", false},
		{"LC_*", "LC_", true}, {"LC_*", "LC", false}, {"*_KEY", "_KEY", true}, {"*", "", true},
		{"A*B*C", "ABC", true}, {"A*B*C", "AC", false}, {"A*B*C", "AxxBxxC", true}, {"X", "X", true},
	} {
		if got := patternMatch(tt.pattern, tt.name); got != tt.want {
			t.Errorf("patternMatch(%q, %q) = %v", tt.pattern, tt.name, got)
		}
	}
}
