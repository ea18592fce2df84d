package sidecar

import (
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/launcher"
)

func TestPlacementProblem(t *testing.T) {
	noBus := launcher.Check{Detail: "dial unix /run/dbus/system_bus_socket: no such file"}
	yes := launcher.Check{OK: true}
	tests := []struct {
		name string
		r    launcher.Report
		d    launcher.Spec
		root bool
		want string // in the problem; "" for none
	}{
		{"systemd as root, no system bus", launcher.Report{SystemBus: noBus, UserBus: yes}, launcher.Spec{Scope: "systemd"}, true, "no system manager answers"},
		{"systemd as root, system bus", launcher.Report{SystemBus: yes}, launcher.Spec{Scope: "systemd"}, true, ""},
		{"systemd --user as root, no user bus", launcher.Report{SystemBus: yes, UserBus: noBus}, launcher.Spec{Scope: "systemd", UserManager: true}, true, "no user manager answers"},
		{"systemd as a user, user bus", launcher.Report{SystemBus: noBus, UserBus: yes}, launcher.Spec{Scope: "systemd"}, false, ""},
		{"cgroup, no parent", launcher.Report{Delegated: launcher.Check{Detail: "read-only"}}, launcher.Spec{Scope: "cgroup"}, true, "no writable cgroup parent: read-only"},
		{"cgroup, parent", launcher.Report{Delegated: yes}, launcher.Spec{Scope: "cgroup"}, true, ""},
		{"auto, degraded is allowed", launcher.Report{AutoReason: "nothing"}, launcher.Spec{}, true, ""},
		{"auto --require-scope, nothing restart-safe", launcher.Report{AutoReason: "no manager, no parent"}, launcher.Spec{RequireScope: true}, true, "--require-scope: no restart-safe placement: no manager, no parent"},
		{"none", launcher.Report{}, launcher.Spec{Scope: "none"}, true, ""},
	}
	for _, tc := range tests {
		got := PlacementProblem(tc.r, tc.d, tc.root)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
