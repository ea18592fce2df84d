package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// TestComposeForeignAllowList: a .env owned by neither the worker's uid nor root sets only credentials,
// the profile's gates and the policy's foreign_allow names. HOME (Python's user site), GIT_CONFIG_COUNT
// (core.fsmonitor) and the rest choose the code a worker of another uid runs; a deny list missed them.
func TestComposeForeignAllowList(t *testing.T) {
	testutil.RequireRoot(t, "chown of the .env to another uid")
	const owner = 54321
	root := t.TempDir()
	mk := func(name, env string) *Profile {
		p := mkProfile(t, root, name, env)
		if err := os.Chown(filepath.Join(p.Home, ".env"), owner, owner); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pol, err := LoadPolicy(strings.NewReader(`{"foreign_allow":["B_SETTING","B_OPT_*"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, env string
		worker    uint32
		pass      []string
		flag      map[string]string
		refused   string // the name refused, "" when the launch composes
	}{
		{"credential", "FIRECRAWL_API_KEY=k\nMY_SERVICE_TOKEN=t\nOPENAI_BASE_URL=u", 0, nil, nil, ""},
		{"gate", "TELEGRAM_ALLOWED_USERS=1", 0, nil, nil, ""},
		{"policy names", "B_SETTING=1\nB_OPT_X=2", 0, nil, nil, ""},
		{"home", "HOME=/x", 0, nil, nil, "HOME"},
		{"git config", "OPENAI_API_KEY=k\nGIT_CONFIG_COUNT=1", 0, nil, nil, "GIT_CONFIG_COUNT"},
		{"xdg", "XDG_CONFIG_HOME=/x", 0, nil, nil, "XDG_CONFIG_HOME"},
		{"openssl", "OPENSSL_CONF=/x", 0, nil, nil, "OPENSSL_CONF"},
		{"lessopen", "LESSOPEN=|x %s", 0, nil, nil, "LESSOPEN"},
		{"path", "PATH=/x", 0, nil, nil, "PATH"},
		{"plain", "B_MARKER=b", 0, nil, nil, "B_MARKER"},
		{"passed", "HOME=/x", 0, []string{"HOME"}, nil, ""},
		{"given", "HOME=/x", 0, nil, map[string]string{"HOME": "/y"}, ""},
		{"worker owns it", "HOME=/x\nPATH=/x\nGIT_CONFIG_COUNT=1", owner, nil, nil, ""},
		{"other worker", "HOME=/x", 1000, nil, nil, "HOME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mk(strings.ReplaceAll(tc.name, " ", "-"), tc.env)
			secrets := ""
			if tc.pass != nil {
				secrets = SecretsNone
			}
			_, err := Compose(Request{Profile: p, Policy: pol, WorkerUID: tc.worker, Pass: tc.pass, Env: tc.flag, Secrets: secrets})
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrRefusedName) {
				t.Fatalf("err = %v, want ErrRefusedName", err)
			}
			msg := err.Error()
			for _, w := range []string{p.EnvFile() + ":", " " + tc.refused + ":", "uid 54321", "worker runs as uid", "--pass " + tc.refused, "--env", "dropping --as"} {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("message is not one line: %q", msg)
			}
		})
	}
	// A root-owned .env is never foreign, whoever the worker is.
	p := mkProfile(t, root, "rootowned", "HOME=/x\nPATH=/x")
	if _, err := Compose(Request{Profile: p, WorkerUID: 1000}); err != nil {
		t.Errorf("root-owned .env refused: %v", err)
	}
}
