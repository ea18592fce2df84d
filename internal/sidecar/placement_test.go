package sidecar

import (
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/doctor"
	"github.com/hlaunch/hlaunch/internal/worker"
)

func TestPlacementProblem(t *testing.T) {
	noBus := doctor.Check{Detail: "dial unix /run/dbus/system_bus_socket: no such file"}
	yes := doctor.Check{OK: true}
	tests := []struct {
		name string
		r    doctor.Report
		d    worker.Spec
		root bool
		want string // in the problem; "" for none
	}{
		{"systemd as root, no system bus", doctor.Report{SystemBus: noBus, UserBus: yes}, worker.Spec{Scope: "systemd"}, true, "no system manager answers"},
		{"systemd as root, system bus", doctor.Report{SystemBus: yes}, worker.Spec{Scope: "systemd"}, true, ""},
		{"systemd --user as root, no user bus", doctor.Report{SystemBus: yes, UserBus: noBus}, worker.Spec{Scope: "systemd", UserManager: true}, true, "no user manager answers"},
		{"systemd as a user, user bus", doctor.Report{SystemBus: noBus, UserBus: yes}, worker.Spec{Scope: "systemd"}, false, ""},
		{"cgroup, no parent", doctor.Report{Delegated: doctor.Check{Detail: "read-only"}}, worker.Spec{Scope: "cgroup"}, true, "no writable cgroup parent: read-only"},
		{"cgroup, parent", doctor.Report{Delegated: yes}, worker.Spec{Scope: "cgroup"}, true, ""},
		{"auto, degraded is allowed", doctor.Report{AutoReason: "nothing"}, worker.Spec{}, true, ""},
		{"auto --require-scope, nothing restart-safe", doctor.Report{AutoReason: "no manager, no parent"}, worker.Spec{RequireScope: true}, true, "--require-scope: no restart-safe placement: no manager, no parent"},
		{"none", doctor.Report{}, worker.Spec{Scope: "none"}, true, ""},
	}
	for _, tc := range tests {
		got := PlacementProblem(tc.r, tc.d, tc.root)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
