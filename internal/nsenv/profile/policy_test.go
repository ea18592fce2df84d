package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyClasses(t *testing.T) {
	p := DefaultPolicy()
	tests := []struct {
		name                            string
		tier1, cred, launch, gate, base bool
	}{
		{"GITHUB_TOKEN", true, true, false, false, false},
		{"github_token", true, true, false, false, false},
		{"GATEWAY_ALLOWED_USERS", true, true, false, true, false},
		{"GATEWAY_ALLOW_ALL_USERS", true, true, false, true, false},
		{"_HERMES_FORCE_X", true, true, false, false, false},
		{"_hermes_force_", true, true, false, false, false},
		{"AUXILIARY_VISION_API_KEY", true, true, false, false, false},
		{"auxiliary_vision_base_url", true, true, false, false, false},
		{"AUXILIARY_VISION_MODEL", false, false, false, false, false},
		{"GATEWAY_RELAY_FOO_SECRET", true, true, false, false, false},
		{"GATEWAY_RELAY_FOO_KEY", true, true, false, false, false},
		{"GATEWAY_RELAY_FOO_TOKEN", true, true, false, false, false},
		{"GATEWAY_RELAY_URL", false, false, false, false, false},
		{"HERMES_DASHBOARD_SESSION_TOKEN", true, true, true, false, false},
		{"OPENAI_API_KEY", false, true, false, false, false},
		{"OPENAI_BASE_URL", false, true, false, false, false},
		{"openai_base_url", false, true, false, false, false},
		{"FIRECRAWL_API_KEY", false, true, false, false, false},
		{"MY_TOOL_PASSWORD", false, true, false, false, false},
		{"MY_CREDS_JSON", false, true, false, false, false},
		{"my_secret", false, true, false, false, false},
		{"SECRET_THING", false, false, false, false, false},
		{"TERMINAL_ENV", false, false, true, false, false},
		{"terminal_env", false, false, true, false, false},
		{"HERMES_MODEL", false, false, true, false, false},
		{"hermes_model", false, false, true, false, false},
		{"TELEGRAM_ALLOWED_USERS", false, false, false, true, false},
		{"DISCORD_ALLOW_ALL_USERS", false, false, false, true, false},
		{"SIGNAL_ALLOW_FROM", false, false, false, true, false},
		{"ALLOWED_CHATS", false, false, false, true, false},
		{"DISCORD_ALLOWED", false, false, false, true, false},
		{"ALLOWEDX", false, false, false, false, false},
		{"PATH", false, false, false, false, true},
		{"path", false, false, false, false, true},
		{"LC_ALL", false, false, false, false, true},
		{"LC_CTYPE", false, false, false, false, true},
		{"LANGUAGE", false, false, false, false, false},
		{"TMPDIR", false, false, false, false, false},
		{"B_MARKER", false, false, false, false, false},
	}
	for _, tt := range tests {
		got := [5]bool{p.IsTier1(tt.name), p.IsCredential(tt.name), p.IsLaunchSetting(tt.name), p.IsProfileGate(tt.name), p.IsBase(tt.name)}
		want := [5]bool{tt.tier1, tt.cred, tt.launch, tt.gate, tt.base}
		if got != want {
			t.Errorf("%s: [tier1 cred launch gate base] = %v, want %v", tt.name, got, want)
		}
	}
	var nilPolicy *Policy
	if !nilPolicy.IsTier1("GH_TOKEN") {
		t.Error("a nil policy must behave as the default")
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pat, name string
		want      bool
	}{
		{"A*B", "AB", true}, {"A*B", "AXXB", true}, {"A*B", "AXXBC", false}, {"*", "", true},
		{"A_*_KEY", "A__KEY", true}, {"A_*_KEY", "A_X_Y_KEY", true}, {"A_*_KEY", "A_KEY", false},
		{"**A", "A", true}, {"*A*B*", "xxAyyBzz", true}, {"*A*B*", "xxByyAzz", false}, {"ABC", "ABC", true},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pat, tt.name); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v", tt.pat, tt.name, got)
		}
	}
}

func TestLoadPolicy(t *testing.T) {
	p, err := LoadPolicy(strings.NewReader(`{"tier1": ["MY_BOT_TOKEN_X"], "credentials": ["acme_url"],
		"credential_suffixes": ["_CREDS"], "profile_gate_markers": ["_WHITELIST"], "base": ["LANGUAGE", "PATH"],
		"tier1_patterns": ["ZZ_*"], "launch_setting_prefixes": ["ACME_"]}`))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		got  bool
		what string
	}{
		{p.IsTier1("my_bot_token_x"), "extended tier1"},
		{p.IsTier1("ZZ_anything"), "extended tier1 pattern"},
		{p.IsTier1("GH_TOKEN"), "default tier1 kept"},
		{p.IsCredential("ACME_URL"), "extended credentials"},
		{p.IsCredential("X_CREDS"), "extended suffix"},
		{p.IsCredential("X_API_KEY"), "default suffix kept"},
		{p.IsProfileGate("SLACK_WHITELIST"), "extended gate"},
		{p.IsBase("LANGUAGE"), "extended base"},
		{p.IsLaunchSetting("ACME_MODE"), "extended launch prefix"},
		{p.IsLaunchSetting("TERMINAL_ENV"), "default launch prefix kept"},
	}
	for _, c := range checks {
		if !c.got {
			t.Errorf("%s: not applied", c.what)
		}
	}
	if n := len(p.Base); n != len(DefaultPolicy().Base)+1 {
		t.Errorf("base has %d entries; a duplicate was added", n)
	}

	empty, err := LoadPolicy(strings.NewReader(`{}`))
	if err != nil || len(empty.Tier1) != len(DefaultPolicy().Tier1) {
		t.Fatalf("empty policy: %v", err)
	}
}

func TestLoadPolicyErrors(t *testing.T) {
	tests := []struct{ in, mention string }{
		{`{"tier_1": ["X"]}`, "tier_1"},
		{`{"tier1": ["X"], "secrets": []}`, "secrets"},
		{`{"tier1": "X"}`, "tier1"},
		{`{"tier1": [""]}`, "tier1"},
		{`{"base": ["A=B"]}`, "base"},
		{`not json`, ""},
		{`{"tier1": []} {}`, "trailing"},
		{``, ""},
		// Strict keys: a case variant or a repeat must not let one reader see a name the other drops.
		{`{"tier1": ["X"], "Tier1": []}`, "Tier1"},
		{`{"TIER1": ["X"]}`, "TIER1"},
		{`{"tier1": ["X"], "tier1": []}`, "duplicate"},
		// A base entry copies from the launcher: never a credential, a gate or a prefix-less pattern.
		{`{"base": ["*"]}`, "literal prefix"},
		{`{"base": ["*_TOKEN"]}`, "literal prefix"},
		{`{"base": ["OPENAI_API_KEY"]}`, "credential"},
		{`{"base": ["gh_token"]}`, "credential"},
		{`{"base": ["SLACK_ALLOWED_USERS"]}`, "credential or a profile gate"},
		{`{"base": ["MY_X"], "credentials": ["my_x"]}`, "credential"},
		// Nor the launch profile's settings (the seed bug), by name, by a pattern of them, or by one the
		// policy adds.
		{`{"base": ["TERMINAL_ENV"]}`, "launch profile's settings"},
		{`{"base": ["hermes_model"]}`, "launch profile's settings"},
		{`{"base": ["TERMINAL_*"]}`, "launch profile's settings"},
		{`{"base": ["HERMES_M*"]}`, "launch profile's settings"},
		{`{"base": ["GW_X"], "launch_setting_prefixes": ["GW_"]}`, "launch profile's settings"},
	}
	for _, tt := range tests {
		_, err := LoadPolicy(strings.NewReader(tt.in))
		if !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("LoadPolicy(%s) = %v, want ErrPolicy mentioning %q", tt.in, err, tt.mention)
		}
	}
}

func TestLoadPolicyFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "p.json")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(`{"credentials": ["X_URL"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"nope": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := LoadPolicyFile(good); err != nil || !p.IsCredential("X_URL") {
		t.Fatalf("good: %v", err)
	}
	if _, err := LoadPolicyFile(bad); !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("bad: %v", err)
	}
	missing := filepath.Join(dir, "missing.json")
	if _, err := LoadPolicyFile(missing); !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing: %v", err)
	}
}

// TestLoadPolicyFileKinds: a policy file that is a FIFO is refused at once (it does not hang the
// launcher), as is one over 1 MiB.
func TestLoadPolicyFileKinds(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"tier1":["`+strings.Repeat("X", maxPolicySize)+`"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, big, dir} {
		if _, err := LoadPolicyFile(p); !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), p) {
			t.Errorf("LoadPolicyFile(%s) = %v, want ErrUnreadable naming it", p, err)
		}
	}
}
