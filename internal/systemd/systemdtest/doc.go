// Package systemdtest starts a real, private systemd user manager for tests, following the recipe in
// docs/testing.md, and removes it with everything it made when the test ends.
//
// # How it is built
//
// Start makes a fresh subtree with a random name (hlaunch-test-sd-<hex>) in every cgroup hierarchy the
// manager uses (on hybrid hosts the named v1 "systemd" hierarchy and the cgroup2 "unified" one; on pure v2
// hosts the cgroup2 root), moves a shell into it, and from there runs
// "unshare --cgroup --mount --propagation private". Inside, fresh cgroup filesystems are mounted on a
// tmpfs over /sys/fs/cgroup: a fresh mount in a cgroup namespace is rooted at the namespace's root, so the
// manager sees only its own subtree. The script checks that the new view is not the host's root (a
// cgroup2 root has no cgroup.events; a v1 root has release_agent) and refuses to go on otherwise: a user
// manager that sees the real root migrates every process on the machine, PID 1 included, into init.scope.
// A tmpfs on /run/systemd with /run/systemd/system makes the manager believe the system booted with
// systemd. XDG_RUNTIME_DIR is a private 0700 directory on the normal filesystem (under /tmp, short enough
// for a socket path), HOME a private directory, and /lib/systemd/systemd --user is exec'd.
//
// # What works from where
//
// D-Bus from the test process itself works: the bus socket ($RuntimeDir/bus, served by a dbus-daemon the
// manager socket-activates) and the manager's private socket ($RuntimeDir/systemd/private) are ordinary
// socket files on the host filesystem, so systemd.Connect with XDG_RUNTIME_DIR=RuntimeDir (see Getenv)
// reaches the manager from outside its namespaces.
//
// Processes to be placed should live in the manager's subtree. On a host whose cgroup2 mount has
// nsdelegate the kernel refuses to move a process from outside the manager's cgroup namespace (ENOENT); on
// hosts without it the move succeeds and pulls the outside process into the subtree, where
// teardown kills it. So a test must pass StartScope only PIDs it started itself (TestStartScopeAdoptsOutsidePID
// in internal/systemd records this), and should start them in the subtree. Command starts programs in a "clients"
// leaf of the subtree (the wrapper shell writes its own PID there, then execs nsenter into the manager's
// cgroup and mount namespaces; the PID is unchanged across the execs), with XDG_RUNTIME_DIR and
// DBUS_SESSION_BUS_ADDRESS set: systemctl --user, systemd-run --user --scope and hlaunch itself work there.
// A launcher under test must therefore run through Command, so that its children are in the subtree too.
//
// Cleanup (registered with t.Cleanup, so it runs on failure too) kills the whole subtree with cgroup.kill
// (or SIGKILL per PID where cgroup.kill is missing), waits for it to be empty, removes every cgroup bottom-up
// in every hierarchy, and removes the temporary directories; the mounts vanish with the namespace. Anything
// left behind fails the test. If the test binary is killed outright, the manager gets SIGKILL through
// PDEATHSIG, but the empty cgroups remain (named hlaunch-test-sd-*) until removed by hand.
package systemdtest
