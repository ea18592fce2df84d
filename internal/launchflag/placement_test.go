package launchflag

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// Both binaries register the same placement flags, with the same displayed defaults, which are the
// launcher's real ones, and the same help; the sidecar's only says it is every spawn's default.
func TestPlacementFlagsSameForBothPurposes(t *testing.T) {
	launch := pflag.NewFlagSet("exec", pflag.ContinueOnError)
	AddPlacement(launch, &Placement{}, ForLaunch)
	spawns := pflag.NewFlagSet("sidecar", pflag.ContinueOnError)
	AddPlacement(spawns, &Placement{}, ForSpawns)
	var names []string
	launch.VisitAll(func(l *pflag.Flag) {
		names = append(names, l.Name)
		s := spawns.Lookup(l.Name)
		if s == nil {
			t.Errorf("--%s: not registered for spawns", l.Name)
			return
		}
		if s.DefValue != l.DefValue || s.Value.Type() != l.Value.Type() {
			t.Errorf("--%s: default %q (%s) for spawns, %q (%s) for a launch", l.Name, s.DefValue, s.Value.Type(), l.DefValue, l.Value.Type())
		}
		if !strings.HasPrefix(s.Usage, "default of every spawn: ") || !strings.HasSuffix(s.Usage, l.Usage) {
			t.Errorf("--%s: spawns' help %q is not the launch's %q as a spawn's default", l.Name, s.Usage, l.Usage)
		}
	})
	if want := []string{"cgroup-parent", "net", "require-scope", "scope", "slice", "user"}; !reflect.DeepEqual(names, want) {
		t.Errorf("placement flags %q, want %q", names, want)
	}
	if d := launch.Lookup("scope").DefValue; d != string(worker.ScopeAuto) {
		t.Errorf("--scope displays default %q, want %q", d, worker.ScopeAuto)
	}
	if d := launch.Lookup("net").DefValue; d != string(worker.NetHost) {
		t.Errorf("--net displays default %q, want %q", d, worker.NetHost)
	}
}

// Apply copies only the flags given: a spec's own fields stay where the command line names nothing, and a
// sidecar started without placement flags has empty defaults (the launcher's own), not the displayed ones.
func TestPlacementApplyOnlyGiven(t *testing.T) {
	parse := func(args ...string) (*pflag.FlagSet, *Placement) {
		var p Placement
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		AddPlacement(fs, &p, ForSpawns)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("parse %q: %v", args, err)
		}
		return fs, &p
	}
	fs, p := parse()
	var empty worker.Spec
	p.Apply(fs, &empty)
	if !reflect.DeepEqual(empty, worker.Spec{}) {
		t.Errorf("no flags given: %+v, want the zero spec", empty)
	}
	if err := p.Check(); err != nil {
		t.Errorf("the displayed defaults do not check: %v", err)
	}
	fs, p = parse("--scope", "systemd", "--require-scope", "--slice", "w.slice", "--user", "--cgroup-parent", "hl/t", "--net", "none")
	s := worker.Spec{Profile: "b", Scope: "cgroup", Slice: "x.slice", Unit: "u"}
	p.Apply(fs, &s)
	want := worker.Spec{Profile: "b", Scope: "systemd", RequireScope: true, Slice: "w.slice", UserManager: true,
		CgroupParent: "hl/t", Net: "none", Unit: "u"}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("applied:\n got %+v\nwant %+v", s, want)
	}
}
