package profile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/strictjson"
	"github.com/hlaunch/hlaunch/internal/trust"
)

// Policy holds the name lists that decide what may enter a child's environ. Matching is case-insensitive
// over ASCII, which is exactly Python's str.upper() for ASCII names; a name holding any other character is
// Tier 1 (see IsTier1). An entry holding one '*' matches a name that starts with the part before it and
// ends with the part after it, as hermes tests them with startswith and endswith (so the parts may share
// characters: AUXILIARY_*_API_KEY matches AUXILIARY_API_KEY); an entry with several '*' is a glob in
// which each '*' matches any run of characters; any other entry is an exact name. DefaultPolicy mirrors hermes; a policy file extends it (LoadPolicy),
// because hermes computes its Tier-2 list at run time from its provider registry and no static copy is
// ever complete.
type Policy struct {
	// Tier1 names are stripped from every child, whatever the secrets mode, and never pass a flag.
	Tier1 []string `json:"tier1"`
	// Tier1Patterns are globs for Tier-1 names (_HERMES_FORCE_*, AUXILIARY_*_API_KEY, ...).
	Tier1Patterns []string `json:"tier1_patterns"`
	// Credentials is the Tier-2 list: provider and tool credentials, stripped under --secrets none.
	Credentials []string `json:"credentials"`
	// CredentialSuffixes make any name ending in one of them credential-shaped (_API_KEY, _TOKEN, ...).
	CredentialSuffixes []string `json:"credential_suffixes"`
	// ProfileGateMarkers mark names that gate who may use one profile (_ALLOWED_, _ALLOW_ALL_, _ALLOW_FROM);
	// a marker matches anywhere in the name, with the name's ends counting as '_'.
	ProfileGateMarkers []string `json:"profile_gate_markers"`
	// Base names are the only ones copied from the launcher's environment unasked (PATH, LANG, LC_*, ...).
	// Unlike the other lists they are matched case-sensitively when copying: "path" is not PATH.
	Base []string `json:"base"`
	// LaunchSettingPrefixes mark names that configure the launch profile (TERMINAL_, HERMES_); they look
	// global but belong to the launcher's profile, so --inherit refuses them.
	LaunchSettingPrefixes []string `json:"launch_setting_prefixes"`
	// ForeignAllow names and patterns may be set by a foreign .env (one that neither the worker's uid nor
	// root owns), besides the credentials and the profile gates, which always may. Any other name there
	// fails the launch (Compose): a worker that rewrote its own .env must not choose what code a worker
	// of another uid (root's) runs, and a list of the names that do (PATH, LD_*, HOME, GIT_CONFIG_*, ...)
	// is never complete. Matched as Tier1Patterns are.
	ForeignAllow []string `json:"foreign_allow"`
}

// DefaultPolicy returns a fresh copy of the built-in lists, which mirror hermes-agent.
func DefaultPolicy() *Policy {
	return &Policy{
		Tier1: []string{
			"GH_TOKEN", "GITHUB_TOKEN", "GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY_PATH",
			"GITHUB_APP_INSTALLATION_ID", "TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN", "SLACK_BOT_TOKEN",
			"SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "GATEWAY_ALLOWED_USERS", "GATEWAY_ALLOW_ALL_USERS",
			"GATEWAY_RELAY_ID", "GATEWAY_RELAY_SECRET", "GATEWAY_RELAY_DELIVERY_KEY", "HASS_TOKEN",
			"EMAIL_PASSWORD", "HERMES_DASHBOARD_SESSION_TOKEN", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET",
			"DAYTONA_API_KEY", "SUDO_PASSWORD", "HERMES_DASHBOARD_BASIC_AUTH_PASSWORD",
			"HERMES_DASHBOARD_BASIC_AUTH_SECRET", "HERMES_DASHBOARD_OIDC_CLIENT_SECRET", "HERMES_DASHBOARD_DRAIN_SECRET",
		},
		// hermes tests these as startswith(prefix) and endswith(suffix), so AUXILIARY_API_KEY and
		// GATEWAY_RELAY_KEY match too (the parts share the '_'): a one-'*' pattern means exactly that.
		Tier1Patterns: []string{
			"_HERMES_FORCE_*", "AUXILIARY_*_API_KEY", "AUXILIARY_*_BASE_URL",
			"GATEWAY_RELAY_*_SECRET", "GATEWAY_RELAY_*_KEY", "GATEWAY_RELAY_*_TOKEN",
		},
		// hermes' static Tier-2 list (docs/hermes-contract.md), which holds profile settings too (home channels,
		// allow lists, the model), then names of hermes' provider registry as last read; the gateway
		// extends it with --policy, because the rest of hermes' list is computed at run time.
		Credentials: []string{
			"OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_ORG_ID", "OPENAI_ORGANIZATION",
			"OPENROUTER_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_TOKEN", "LLM_MODEL",
			"GOOGLE_API_KEY", "VERTEX_CREDENTIALS_PATH", "GOOGLE_APPLICATION_CREDENTIALS", "DEEPSEEK_API_KEY",
			"MISTRAL_API_KEY", "GROQ_API_KEY", "TOGETHER_API_KEY", "PERPLEXITY_API_KEY", "COHERE_API_KEY",
			"FIREWORKS_API_KEY", "XAI_API_KEY", "HELICONE_API_KEY", "PARALLEL_API_KEY", "FIRECRAWL_API_KEY",
			"FIRECRAWL_API_URL", "TELEGRAM_HOME_CHANNEL", "TELEGRAM_HOME_CHANNEL_NAME", "DISCORD_HOME_CHANNEL",
			"DISCORD_HOME_CHANNEL_NAME", "DISCORD_REQUIRE_MENTION", "DISCORD_FREE_RESPONSE_CHANNELS",
			"DISCORD_AUTO_THREAD", "SLACK_HOME_CHANNEL", "SLACK_HOME_CHANNEL_NAME", "SLACK_ALLOWED_USERS",
			"WHATSAPP_ENABLED", "WHATSAPP_MODE", "WHATSAPP_ALLOWED_USERS", "SIGNAL_HTTP_URL", "SIGNAL_ACCOUNT",
			"SIGNAL_ALLOWED_USERS", "SIGNAL_GROUP_ALLOWED_USERS", "SIGNAL_HOME_CHANNEL",
			"SIGNAL_HOME_CHANNEL_NAME", "SIGNAL_IGNORE_STORIES", "HASS_TOKEN", "HASS_URL", "EMAIL_ADDRESS",
			"EMAIL_PASSWORD", "EMAIL_IMAP_HOST", "EMAIL_SMTP_HOST", "EMAIL_HOME_ADDRESS",
			"EMAIL_HOME_ADDRESS_NAME", "HERMES_DASHBOARD_SESSION_TOKEN", "GATEWAY_ALLOWED_USERS", "GH_TOKEN",
			"GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY_PATH", "GITHUB_APP_INSTALLATION_ID", "MODAL_TOKEN_ID",
			"MODAL_TOKEN_SECRET", "DAYTONA_API_KEY", "GATEWAY_RELAY_ID", "GATEWAY_RELAY_SECRET",
			"GATEWAY_RELAY_DELIVERY_KEY", "VERCEL_OIDC_TOKEN", "VERCEL_TOKEN", "VERCEL_PROJECT_ID",
			"VERCEL_TEAM_ID", "AWS_BEARER_TOKEN_BEDROCK",
			// provider registry
			"OPENROUTER_BASE_URL", "GEMINI_API_KEY", "BROWSERBASE_API_KEY", "BROWSERBASE_PROJECT_ID",
			"NOUS_API_KEY", "NOUS_BASE_URL", "HF_TOKEN", "GLM_API_KEY", "KIMI_API_KEY", "MINIMAX_API_KEY",
			"DASHSCOPE_API_KEY", "TAVILY_API_KEY", "EXA_API_KEY", "ELEVENLABS_API_KEY", "FAL_KEY",
			"VOICE_TOOLS_OPENAI_KEY", "HONCHO_API_KEY", "GITHUB_COPILOT_TOKEN", "COPILOT_GITHUB_TOKEN",
			"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "API_SERVER_KEY",
		},
		CredentialSuffixes:    []string{"_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_KEY", "_JSON"},
		ProfileGateMarkers:    []string{"_ALLOWED_", "_ALLOW_ALL_", "_ALLOW_FROM"},
		Base:                  []string{"PATH", "LANG", "LC_*", "TZ", "TERM", "USER", "LOGNAME", "SHELL", "HOME"},
		LaunchSettingPrefixes: []string{"TERMINAL_", "HERMES_"},
	}
}

// LoadPolicy reads a JSON policy whose lists EXTEND the defaults (a policy can add names, never remove
// one: a file that could empty Tier 1 would be a way to leak). An unknown key, a value of the wrong type,
// an empty entry or trailing data gives ErrPolicy naming the problem.
func LoadPolicy(r io.Reader) (*Policy, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	var ext Policy
	// Strict: keys exact and unique, so that a policy the gateway's own JSON tools read as adding a name
	// cannot be decoded here as adding nothing ({"tier1":["X"],"Tier1":[]}).
	if err := strictjson.Decode(data, &ext); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	p := DefaultPolicy()
	for _, l := range []struct {
		key string
		dst *[]string
		add []string
	}{
		{"tier1", &p.Tier1, ext.Tier1},
		{"tier1_patterns", &p.Tier1Patterns, ext.Tier1Patterns},
		{"credentials", &p.Credentials, ext.Credentials},
		{"credential_suffixes", &p.CredentialSuffixes, ext.CredentialSuffixes},
		{"profile_gate_markers", &p.ProfileGateMarkers, ext.ProfileGateMarkers},
		{"base", &p.Base, ext.Base},
		{"launch_setting_prefixes", &p.LaunchSettingPrefixes, ext.LaunchSettingPrefixes},
		{"foreign_allow", &p.ForeignAllow, ext.ForeignAllow},
	} {
		for _, s := range l.add {
			if strings.TrimSpace(s) == "" || strings.ContainsAny(s, "=\x00") {
				return nil, fmt.Errorf("%w: %q: entry %q is empty or holds '=' or NUL", ErrPolicy, l.key, s)
			}
			if !slices.Contains(*l.dst, s) {
				*l.dst = append(*l.dst, s)
			}
		}
	}
	// A base entry copies from the launcher's own environment, which holds the launch profile's values:
	// it must name something global, never a credential or a gate, and a pattern must keep a prefix
	// ("LC_*", not "*" or "*_URL").
	m := p.compile()
	for _, b := range ext.Base {
		up := upperASCII(b)
		if i := strings.IndexByte(up, '*'); i == 0 {
			return nil, fmt.Errorf("%w: \"base\": entry %q: a pattern must start with a literal prefix", ErrPolicy, b)
		}
		if !strings.Contains(up, "*") && (m.isCredential(up) || m.isProfileGate(up)) {
			return nil, fmt.Errorf("%w: \"base\": entry %q is a credential or a profile gate; those come only from the target's .env", ErrPolicy, b)
		}
		// The launch profile's settings (TERMINAL_ENV, HERMES_MODEL) are in the launcher's environment too,
		// and --inherit refuses them: a base entry, or a pattern whose literal part is one, would give every
		// child the launch profile's.
		if lit, _, _ := strings.Cut(up, "*"); m.isLaunchSetting(lit) {
			return nil, fmt.Errorf("%w: \"base\": entry %q names the launch profile's settings (%s); those come only from the target's .env", ErrPolicy, b, strings.Join(p.LaunchSettingPrefixes, "*, ")+"*")
		}
	}
	return p, nil
}

// maxPolicySize bounds a policy file; hermes' whole provider registry is a few KiB.
const maxPolicySize = 1 << 20

// LoadPolicyFile is LoadPolicy over a file; errors name the file. The file must be a regular file of at
// most 1 MiB: a FIFO or device named by mistake is refused instead of hanging or being read forever.
func LoadPolicyFile(path string) (*Policy, error) {
	// A policy chooses which of the launcher's own names reach every child: a file another uid could
	// change is that uid's choice (internal/trust).
	file, err := trust.Resolve(path)
	if errors.Is(err, trust.ErrUntrusted) {
		return nil, fmt.Errorf("--policy %s: %w: %w (a policy is taken only from a file that only root or this uid can change)", path, ErrUnreadable, err)
	}
	var f *os.File
	if err == nil {
		f, err = os.OpenFile(file, syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("--policy %s: %w: %w", path, ErrUnreadable, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("--policy %s: %w: not a regular file", path, ErrUnreadable)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPolicySize+1))
	if err != nil {
		return nil, fmt.Errorf("--policy %s: %w: %w", path, ErrUnreadable, err)
	}
	if len(data) > maxPolicySize {
		return nil, fmt.Errorf("--policy %s: %w: larger than %d bytes", path, ErrUnreadable, maxPolicySize)
	}
	p, err := LoadPolicy(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("--policy %s: %w", path, err)
	}
	return p, nil
}

// IsForeignAllowed reports whether a foreign .env may set name: a credential, a profile gate or a
// ForeignAllow name (see Policy.ForeignAllow).
func (p *Policy) IsForeignAllowed(name string) bool {
	return p.compile().foreignAllowed(upperASCII(name))
}

// IsTier1 reports whether name is a Tier-1 name (exact list or pattern), or a name holding a character
// outside ASCII: hermes upper-cases with Python's Unicode str.upper() ('ſ' is 'S', 'ß' is "SS", so
// "ſudo_password" is SUDO_PASSWORD to hermes), and rather than reproduce every full case mapping here such
// a name is never let into a child.
func (p *Policy) IsTier1(name string) bool { return p.compile().isTier1(upperASCII(name)) }

// IsCredential reports whether name is a credential: Tier 1, the Tier-2 list, or credential-shaped (ends
// in one of the credential suffixes).
func (p *Policy) IsCredential(name string) bool { return p.compile().isCredential(upperASCII(name)) }

// IsLaunchSetting reports whether name is a launch-profile setting (TERMINAL_*, HERMES_*).
func (p *Policy) IsLaunchSetting(name string) bool {
	return p.compile().isLaunchSetting(upperASCII(name))
}

// IsProfileGate reports whether name gates one profile's users (<PLATFORM>_ALLOWED_USERS, ...).
func (p *Policy) IsProfileGate(name string) bool { return p.compile().isProfileGate(upperASCII(name)) }

// IsBase reports whether name is on the base list, ignoring case. (Compose copies from the launcher only
// names that match the base list exactly; see Policy.Base.)
func (p *Policy) IsBase(name string) bool { return p.compile().base.match(upperASCII(name)) }
