package systemdtest

import (
	"context"
	"fmt"
	"strings"
)

// Systemctl runs "systemctl --user args..." in the manager's world and returns its trimmed combined output.
func (m *Manager) Systemctl(ctx context.Context, args ...string) (string, error) {
	out, err := m.Command(ctx, "systemctl", append([]string{"--user"}, args...)...).CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		return s, fmt.Errorf("systemctl --user %s: %w: %s", strings.Join(args, " "), err, s)
	}
	return s, nil
}

// StartService starts argv as the transient service unit (systemd-run --user --unit) with the extra
// properties props (e.g. "KillMode=mixed") and Env's variables set, so a program in it (a gateway) can
// reach this manager the way it would on a real host. It returns when the unit is started.
func (m *Manager) StartService(ctx context.Context, unit string, props []string, argv ...string) error {
	args := []string{"--user", "--unit", unit, "--quiet"}
	for _, e := range m.Env() {
		args = append(args, "--setenv="+e)
	}
	for _, p := range props {
		args = append(args, "-p", p)
	}
	args = append(args, "--")
	out, err := m.Command(ctx, "systemd-run", append(args, argv...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemd-run %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Show returns one property of unit (systemctl --user show -p prop --value).
func (m *Manager) Show(ctx context.Context, unit, prop string) (string, error) {
	return m.Systemctl(ctx, "show", "-p", prop, "--value", unit)
}
