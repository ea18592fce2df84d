package profile

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// propertyNames is the pool random environments and .env files draw from: base names, derived names,
// launch settings, credentials of every kind, gates, lower-case variants and plain names.
var propertyNames = []string{
	"PATH", "path", "LANG", "LC_ALL", "LC_CTYPE", "LC_", "TZ", "TERM", "USER", "LOGNAME", "SHELL", "HOME", "LANGUAGE",
	"HERMES_HOME", "hermes_home", "HERMES_PROFILE", "HERMES_REAL_HOME", "TMPDIR", "TMP", "TEMP",
	"HERMES_MODEL", "hermes_model", "TERMINAL_ENV", "terminal_env", "TERMINAL_DOCKER_IMAGE",
	"OPENAI_API_KEY", "openai_api_key", "OPENAI_BASE_URL", "FIRECRAWL_API_KEY", "firecrawl_api_key",
	"GH_TOKEN", "GITHUB_TOKEN", "gh_token", "_HERMES_FORCE_X", "AUXILIARY_V_API_KEY", "GATEWAY_RELAY_Q_TOKEN",
	"MY_PASSWORD", "X_JSON", "Y_KEY", "TELEGRAM_ALLOWED_USERS", "DISCORD_ALLOW_ALL_USERS", "SIGNAL_ALLOW_FROM",
	"A_MARKER", "B_MARKER", "EDITOR", "PAGER", "SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "Z",
}

// TestComposeProperty: over many random launcher environments, profiles and flags, every name in the
// child came from the base list (with the launcher's value), B's own .env (with B's value), the derived
// names, or a flag; no Tier-1 name ever appears; under --secrets none no credential appears unless passed;
// and no refused flag ever yields an environ.
func TestComposeProperty(t *testing.T) {
	seed := int64(20261129)
	rng := rand.New(rand.NewSource(seed))
	pol := DefaultPolicy()
	compiled := pol.compile()
	root := t.TempDir()
	const nProfiles = 40
	type prof struct {
		p      *Profile
		dotenv map[string]DotenvEntry // last occurrence wins
	}
	profs := make([]prof, nProfiles)
	pick := func() string { return propertyNames[rng.Intn(len(propertyNames))] }
	val := func(tag string) string { return fmt.Sprintf("%s-%d", tag, rng.Intn(1000)) }
	for i := range profs {
		var sb strings.Builder
		for range rng.Intn(12) {
			prefix := []string{"", "export ", "  "}[rng.Intn(3)]
			fmt.Fprintf(&sb, "%s%s=%s\n", prefix, pick(), val("profile"))
		}
		p := mkProfile(t, root, fmt.Sprintf("p%d", i), sb.String())
		entries, err := ReadDotenv(p)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]DotenvEntry{}
		for _, e := range entries {
			m[e.Key] = e
		}
		profs[i] = prof{p, m}
	}

	const cases = 4000
	composed := 0
	for c := range cases {
		pr := profs[rng.Intn(nProfiles)]
		var launcher []string
		for range rng.Intn(30) {
			launcher = append(launcher, pick()+"="+val("launcher"))
		}
		req := Request{Profile: pr.p, Launcher: launcher, OSHome: "/home/os", Policy: pol}
		if rng.Intn(2) == 0 {
			req.Secrets = SecretsNone
		}
		if rng.Intn(3) == 0 {
			req.Env = map[string]string{}
			for range 1 + rng.Intn(3) {
				req.Env[pick()] = val("flag")
			}
		}
		if rng.Intn(3) == 0 {
			req.Inherit = []string{pick()}
		}
		if rng.Intn(4) == 0 {
			req.Pass = []string{pick()}
		}
		env, err := Compose(req)
		if err != nil {
			if env != nil {
				t.Fatalf("case %d: environ returned with error %v", c, err)
			}
			continue
		}
		composed++
		for _, e := range env {
			up := upperASCII(e.Name)
			if pol.IsTier1(e.Name) {
				t.Fatalf("case %d: Tier-1 name %s reached the child (source %s)", c, e.Name, e.Source)
			}
			switch {
			case e.Source == SourceDerived:
				if !slices.Contains([]string{"HERMES_HOME", "HERMES_PROFILE", "TMPDIR", "TMP", "TEMP", "HERMES_REAL_HOME"}, e.Name) {
					t.Fatalf("case %d: unexpected derived name %s", c, e.Name)
				}
			case e.Source == SourceFlag:
				if v, ok := req.Env[e.Name]; !ok || v != e.Value {
					t.Fatalf("case %d: flag entry %s=%s not from --env", c, e.Name, e.Value)
				}
			case e.Source == SourceLauncher:
				v, ok := lookupFirst(launcher, e.Name)
				if !ok || v != e.Value {
					t.Fatalf("case %d: launcher entry %s=%s not in the launcher", c, e.Name, e.Value)
				}
				inherited := slices.Contains(req.Inherit, e.Name)
				if !inherited && !compiled.baseExact.match(e.Name) {
					t.Fatalf("case %d: launcher name %s is neither base nor --inherit", c, e.Name)
				}
				if inherited && (pol.IsCredential(e.Name) || pol.IsLaunchSetting(e.Name) || pol.IsProfileGate(e.Name)) {
					t.Fatalf("case %d: refused name %s inherited", c, e.Name)
				}
			case strings.HasPrefix(e.Source, "profile:"+pr.p.EnvFile()+":"):
				d, ok := pr.dotenv[e.Name]
				if !ok || d.Value != e.Value || e.Source != fmt.Sprintf("profile:%s:%d", pr.p.EnvFile(), d.Line) {
					t.Fatalf("case %d: profile entry %s=%s (%s) not B's last line", c, e.Name, e.Value, e.Source)
				}
				if isPinned(up) {
					t.Fatalf("case %d: pinned %s taken from the .env", c, e.Name)
				}
				if req.Secrets == SecretsNone && pol.IsCredential(e.Name) && !slices.Contains(req.Pass, e.Name) {
					t.Fatalf("case %d: credential %s passed under --secrets none", c, e.Name)
				}
			default:
				t.Fatalf("case %d: %s has unknown source %q", c, e.Name, e.Source)
			}
			if e.Secret != pol.IsCredential(e.Name) {
				t.Fatalf("case %d: %s Secret=%v", c, e.Name, e.Secret)
			}
		}
		if h, _ := env.Lookup("HERMES_HOME"); h.Value != pr.p.Home {
			t.Fatalf("case %d: HERMES_HOME = %q, want %q", c, h.Value, pr.p.Home)
		}
	}
	if composed < cases/4 {
		t.Fatalf("only %d of %d cases composed; the generator mostly makes refused requests", composed, cases)
	}
	t.Logf("seed %d: %d cases, %d composed", seed, cases, composed)
}
