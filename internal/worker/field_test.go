package worker

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/cgroup"
)

// Settings names every JSON field of the Spec (and of its limits), each once.
func TestSettingsCoverTheSpec(t *testing.T) {
	want := map[string]bool{}
	collect := func(typ reflect.Type, prefix string) {
		for i := 0; i < typ.NumField(); i++ {
			name := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]
			if name != "" && name != "-" && name != "limits" {
				want[prefix+name] = true
			}
		}
	}
	collect(reflect.TypeOf(Spec{}), "")
	collect(reflect.TypeOf(cgroup.Limits{}), "limits.")
	got := map[string]bool{}
	for _, s := range Settings() {
		if got[s.Field] {
			t.Errorf("%s twice", s.Field)
		}
		got[s.Field] = true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Settings fields %v, Spec fields %v", got, want)
	}
}

func TestFieldErrorWording(t *testing.T) {
	for _, tc := range []struct{ spec, flags, fields string }{
		{`{"profile":"b","argv":["x"],"timeout":"10"}`, `--timeout "10": not a duration`, `spec field timeout "10": not a duration`},
		{`{"profile":"b","argv":["x"],"user":"4294967296:4294967296"}`, `--as "4294967296:4294967296": uid "4294967296": out of range`, `spec field user "4294967296:4294967296": uid "4294967296": out of range`},
		{`{"profile":"b","argv":["x"],"tty_titles":true}`, `--tty-titles needs --sandbox in the foreground`, `spec field tty_titles needs sandbox in the foreground`},
		{`{"profile":"b","argv":["x"],"sandbox":true,"detach":true,"tty_titles":true}`, `--tty-titles needs --sandbox`, `spec field tty_titles needs sandbox`},
		{`{"profile":"b","argv":["x"],"secrets":"x"}`, `--secrets "x": want profile or none`, `spec field secrets "x": want profile or none`},
		{`{"argv":["x"]}`, `-p/--profile is required`, `spec field profile is required`},
		{`{"profile":"b","argv":[]}`, `no command given`, `no command given`},
	} {
		var s Spec
		if err := json.Unmarshal([]byte(tc.spec), &s); err != nil {
			t.Fatal(err)
		}
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.flags) {
			t.Errorf("%s: %v, want %q", tc.spec, err, tc.flags)
			continue
		}
		if got := SpecMessage(err); !strings.HasPrefix(got, tc.fields) {
			t.Errorf("%s: SpecMessage %q, want %q...", tc.spec, got, tc.fields)
		}
	}
}

// docs/schema/spec.schema.json names each property's flag (x-flag) as Settings does.
func TestSchemaFlagsMatchSettings(t *testing.T) {
	b, err := os.ReadFile("../../docs/schema/spec.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	type prop struct {
		Flag       string          `json:"x-flag"`
		Properties map[string]prop `json:"properties"`
	}
	var schema prop
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, p := range schema.Properties {
		if k == "limits" {
			for lk, lp := range p.Properties {
				got["limits."+lk] = lp.Flag
			}
			continue
		}
		got[k] = p.Flag
	}
	for _, s := range Settings() {
		if got[s.Field] != s.Flag {
			t.Errorf("spec.schema.json %s: x-flag %q, Settings %q", s.Field, got[s.Field], s.Flag)
		}
	}
}

// specWords finds a flag in any punctuation around it and keeps the punctuation.
func TestSpecWordsPunctuation(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`--sandbox: pass --as UID:GID (--as 0:0 for root)`, `spec field sandbox: pass user UID:GID (user 0:0 for root)`},
		{`needs --sandbox.`, `needs spec field sandbox.`},
		{`see [--pids], or "--key", or '--log'`, `see [spec field limits.pids], or "key", or 'log'`},
		{"a `--memory` and (--cpus)", "a `spec field limits.memory` and (limits.cpus)"},
		{`--timeout, --grace; --rw:`, `spec field timeout, grace; rw:`},
		{`(--as)`, `(spec field user)`},
		{`--as-user is no flag, nor is x--as`, `--as-user is no flag, nor is x--as`},
		{`no command given`, `no command given`},
	} {
		if got := specWords(tc.in); got != tc.want {
			t.Errorf("specWords(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
