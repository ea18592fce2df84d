package systemdtest

// startScript runs in the shell that becomes the manager. It joins the fresh subtree, then re-runs
// itself in new cgroup and mount namespaces. Arguments: layout, v2 subtree, v1 subtree ("" on pure v2),
// runtime dir, home, innerScript, uid, gid, systemd binary.
const startScript = `
set -eu
layout=$1 v2=$2 v1=$3 rt=$4 home=$5 inner=$6 uid=$7 gid=$8 sdbin=$9
echo $$ > "$v2/cgroup.procs"
if [ "$layout" = hybrid ]; then echo $$ > "$v1/cgroup.procs"; fi
exec unshare --cgroup --mount --propagation private /bin/sh -euc "$inner" systemdtest-inner "$layout" "$rt" "$home" "$uid" "$gid" "$sdbin"
`

// innerScript mounts the fresh view and execs the manager. The two checks are the one step of the recipe
// that must never be skipped: a cgroup2 root has no cgroup.events and a v1 root has release_agent, so if
// either says "root" the fresh mounts are not rooted at our subtree and systemd would take over the host.
const innerScript = `
layout=$1 rt=$2 home=$3 uid=$4 gid=$5 systemd=$6
refuse() { echo "systemdtest: REFUSING to start systemd: $1" >&2; exit 97; }
if [ "$layout" = hybrid ]; then
	mount -t tmpfs -o mode=755,size=64k systemdtest /sys/fs/cgroup
	mkdir /sys/fs/cgroup/systemd /sys/fs/cgroup/unified
	mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd
	mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
	u=/sys/fs/cgroup/unified
	if [ -e /sys/fs/cgroup/systemd/release_agent ]; then refuse "the name=systemd mount is the host's root"; fi
else
	# A pure-v2 host already has cgroup2 there: mount(8) refuses the same source on it ("already
	# mounted") and the kernel the same superblock on its own root (EBUSY). So a tmpfs first, as above,
	# and the fresh, namespace-rooted cgroup2 on that.
	mount -t tmpfs -o mode=755,size=64k systemdtest /sys/fs/cgroup
	mount -t cgroup2 systemdtest-cgroup2 /sys/fs/cgroup
	u=/sys/fs/cgroup
fi
if [ ! -e "$u/cgroup.events" ]; then refuse "$u/cgroup.events is missing: the cgroup2 mount is the host's root"; fi
if [ ! -d /run/systemd ]; then refuse "/run/systemd does not exist to mount a tmpfs on"; fi
mount -t tmpfs -o mode=755,size=1m systemdtest /run/systemd
mkdir /run/systemd/system
export XDG_RUNTIME_DIR="$rt" HOME="$home" SYSTEMD_LOG_TARGET=console SYSTEMD_LOG_LEVEL=notice
if [ "$uid" != 0 ]; then
	exec setpriv --reuid="$uid" --regid="$gid" --clear-groups "$systemd" --user
fi
exec "$systemd" --user
`

// clientScript moves itself into the clients leaf (v2 first, then v1 when given) and execs nsenter into the
// manager's cgroup and mount namespaces. Arguments: manager PID, v2 leaf, v1 leaf or "", then the command
// (prefixed with setpriv for a non-root manager).
const clientScript = `
pid=$1 v2=$2 v1=$3
shift 3
echo $$ > "$v2/cgroup.procs" || exit 125
if [ -n "$v1" ]; then echo $$ > "$v1/cgroup.procs" || exit 125; fi
exec nsenter -t "$pid" --cgroup --mount -- "$@"
`
