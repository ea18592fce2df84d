#!/bin/sh
# mem-idle.sh BIN N [EXEC FLAGS...]: start N detached idle `sleep 600` workers with BIN on a private root,
# state directory and cgroup parent; print the mean Pss, Anonymous, Rss and threads of the shims, the init
# stubs and the workers; then stop them all and remove what was made, in every cgroup hierarchy. EXEC FLAGS
# go to `hlaunch exec` (a sandboxed run: --sandbox --as 0:0, the private root's profile being root's).
set -eu
bin=$1 n=$2; shift 2
t=$(mktemp -d /tmp/mem-idle.XXXXXX)
mkdir -p "$t/root/profiles/b" && : >"$t/root/profiles/b/.env"
parent=memidle-$$
export HLAUNCH_ROOT=$t/root HLAUNCH_STATE_DIR=$t/state
cleanup() {
	for id in $(cat "$t/ids" 2>/dev/null); do "$bin" stop "$id" >/dev/null 2>&1 || true; done
	sleep 1
	for c in /sys/fs/cgroup/$parent /sys/fs/cgroup/*/$parent; do
		[ -d "$c" ] || continue
		find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
		[ ! -d "$c" ] || echo "mem-idle: warning: could not remove $c" >&2
	done
	rm -rf "$t"
}
trap cleanup EXIT
i=0
while [ $i -lt "$n" ]; do
	"$bin" exec -p b --scope cgroup --cgroup-parent "$parent" --detach "$@" -- sleep 600 |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' >>"$t/ids"
	i=$((i + 1))
done
sleep 3
python3 - "$parent" <<'PY'
import os, sys
parent = "/" + sys.argv[1] + "/"
rows = {"shim": [], "stub": [], "sleep": []}
for pid in os.listdir("/proc"):
    if not pid.isdigit(): continue
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        if parent not in open(f"/proc/{pid}/cgroup").read(): continue
        arg = cmd[1].decode() if len(cmd) > 1 else ""
        role = "shim" if arg == "__shim" else "stub" if arg == "__init" else "sleep" if cmd[0].endswith(b"sleep") else None
        if role is None: continue
        r = {}
        for l in open(f"/proc/{pid}/smaps_rollup"):
            p = l.split()
            if p[0] in ("Pss:", "Anonymous:", "Rss:"): r[p[0][:-1]] = int(p[1])
        for l in open(f"/proc/{pid}/status"):
            if l.startswith("Threads:"): r["Threads"] = int(l.split()[1])
    except OSError: continue  # gone while read
    rows[role].append(r)
for role, rs in rows.items():
    if not rs: continue
    m = lambda k: sum(r[k] for r in rs) / len(rs)
    print(f"{role}: n={len(rs)} Pss={m('Pss'):.0f} KiB Anon={m('Anonymous'):.0f} KiB Rss={m('Rss'):.0f} KiB threads={m('Threads'):.1f}")
PY
cat /proc/loadavg
