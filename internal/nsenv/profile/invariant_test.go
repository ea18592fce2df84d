package profile

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"
)

// TestHermesInvariant is the invariant hermes' own tests hold (docs/hermes-contract.md): launch profile A's
// .env mirrored into the launcher's environment (with lower-case variants), HERMES_HOME=<A>, and an
// ambient-only credential; the child of B gets exactly B's world.
func TestHermesInvariant(t *testing.T) {
	root := t.TempDir()
	aEnv := "A_MARKER=a\nHERMES_MODEL=a-model\nTERMINAL_ENV=docker\nFIRECRAWL_API_KEY=a-fc\n"
	a := mkProfile(t, root, "a", aEnv)
	b := mkProfile(t, root, "b", "B_MARKER=b\nFIRECRAWL_API_KEY=b-fc\nGITHUB_TOKEN=b-gh\nexport slack_bot_token=b-sl\n")

	aEntries, err := ReadDotenv(a)
	if err != nil {
		t.Fatal(err)
	}
	launcher := []string{"PATH=/usr/bin:/bin", "HOME=/home/gw", "LANG=C.UTF-8", "USER=gw", "HERMES_HOME=" + a.Home,
		"HERMES_PROFILE=a", "OPENAI_API_KEY=ambient-only", "TMPDIR=/tmp/a"}
	for _, e := range aEntries { // the gateway's os.environ holds A's .env
		launcher = append(launcher, e.Key+"="+e.Value, strings.ToLower(e.Key)+"="+e.Value)
	}

	scratch := filepath.Join(b.Home, "cache", "scratch")
	base := map[string]string{
		"PATH": "/usr/bin:/bin", "HOME": "/home/gw", "LANG": "C.UTF-8", "USER": "gw",
		"HERMES_HOME": b.Home, "HERMES_PROFILE": "b", "TMPDIR": scratch, "TMP": scratch, "TEMP": scratch,
		"HERMES_REAL_HOME": "/home/gw", "B_MARKER": "b",
	}
	for _, mode := range []string{SecretsProfile, SecretsNone} {
		t.Run(mode, func(t *testing.T) {
			env, err := Compose(Request{Profile: b, Secrets: mode, Launcher: launcher, OSHome: "/home/gw"})
			if err != nil {
				t.Fatal(err)
			}
			want := maps.Clone(base)
			if mode == SecretsProfile {
				want["FIRECRAWL_API_KEY"] = "b-fc" // B's value or absent, never A's
			}
			got := envMap(t, env)
			if !maps.Equal(got, want) {
				t.Fatalf("child of b:\n got %v\nwant %v", got, want)
			}
			for _, banned := range []string{"A_MARKER", "HERMES_MODEL", "TERMINAL_ENV", "a_marker", "hermes_model",
				"terminal_env", "firecrawl_api_key", "OPENAI_API_KEY", "GITHUB_TOKEN", "slack_bot_token"} {
				if _, ok := env.Lookup(banned); ok {
					t.Errorf("%s reached the child", banned)
				}
			}
			for _, s := range env.Strings() {
				if strings.Contains(s, "a-model") || strings.Contains(s, "a-fc") || strings.Contains(s, "ambient") || strings.Contains(s, a.Home) {
					t.Errorf("a value of A or the launcher leaked: %s", s)
				}
			}
		})
	}
}
