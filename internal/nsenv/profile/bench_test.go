package profile

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCompose1000 composes a child's environ from a 1,000-line .env (a mix of plain names,
// credentials, Tier-1 names, quotes and comments) and a typical launcher environment.
func BenchmarkCompose1000(b *testing.B) {
	var sb strings.Builder
	for i := range 1000 {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&sb, "PLAIN_%d=value-%d\n", i, i)
		case 1:
			fmt.Fprintf(&sb, "export TOOL_%d_API_KEY=\"sk-%d\\\"x\" # key\n", i, i)
		case 2:
			fmt.Fprintf(&sb, "# comment %d\n", i)
		case 3:
			fmt.Fprintf(&sb, "GATEWAY_RELAY_N%d_TOKEN='t%d'\n", i, i)
		default:
			fmt.Fprintf(&sb, "SETTING_%d = some value #%d # trailing\n", i, i)
		}
	}
	p := mkProfile(b, b.TempDir(), "bench", sb.String())
	launcher := []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "USER=u", "SHELL=/bin/sh",
		"TERM=xterm", "HERMES_HOME=/a", "OPENAI_API_KEY=x", "TERMINAL_ENV=docker", "EDITOR=vi", "PWD=/"}
	req := Request{Profile: p, Launcher: launcher, OSHome: "/home/u", Env: map[string]string{"X": "1"}, Inherit: []string{"EDITOR"}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		env, err := Compose(req)
		if err != nil || len(env) < 600 {
			b.Fatalf("%d entries, %v", len(env), err)
		}
	}
}
