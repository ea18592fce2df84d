#!/usr/bin/env bash
# `make bench-ab BASE=<commit>`: the launch path of BASE against this checkout's, interleaved in one
# hyperfine run on the same hermes root, so that a change on the launch path shows its cost beside the
# commit before it (docs/benchmarks.md, "A/B against the commit before"). Both trees are built the way
# `make build` builds (static, stripped); BASE is checked out in a temporary git worktree.
#
# Rows: `hlaunch version` (the start of one hlaunch process), `exec --scope none`, `exec --scope cgroup` and
# `exec --sandbox --scope cgroup` of profile b, whose home belongs to nobody (65534), as a hermes home
# belongs to its user: a root launcher's worker runs as that owner, with the default limits. bwrap is the
# anchor; the head also runs with its default limits off (`max`). Each command runs RUNS times in ROUNDS round-robin rounds (a burst of load from elsewhere lands on
# every command, not on one); the table gives medians and head/base.
#
# The sidecar half (`internal/sidecar` BenchmarkSidecarAB, built from this checkout and run against both
# builds): a `hlaunch sidecar --scope cgroup` of each side, state on tmpfs, 10 clients in a closed loop,
# base and head alternated in SIDECAR_ROUNDS rounds (a fresh sidecar and state directory each), pooled:
# spawns/s, p50, p99 and CPU per spawn; then per side WORKERS idle detached workers (`sleep`), unsandboxed
# and sandboxed, and the summed Pss (smaps_rollup) of the hlaunch processes serving them (shims, init
# stubs) against the workers' own.
#
# Knobs: BASE (required: a commit, tag or branch), RUNS (default 400), ROUNDS (20), WARMUP (5),
# OUT (default bin/bench-ab.md); SIDECAR_ROUNDS (3), SIDECAR_SPAWNS (300 a round and side), WORKERS (200;
# 1000 for issue 28's figure, about a minute more), STATE_BASE (/dev/shm), SKIP_SIDECAR=1. With the
# defaults the whole run takes about 4 minutes on this 2-vCPU machine. Needs root (raw cgroups), hyperfine,
# git, go, python3; bwrap optional. Everything it makes lives in a temporary directory, a state directory
# under STATE_BASE, and cgroup parents hlaunch-benchab-<random> (the launches) and
# hlaunch-benchab-<random>-sc-<n> (one per sidecar) in every hierarchy, removed at the end, on failure and
# ^C too.
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=${BASE:?BASE=<commit> is required (e.g. make bench-ab BASE=HEAD~1)}
RUNS=${RUNS:-400}
ROUNDS=${ROUNDS:-20}
WARMUP=${WARMUP:-5}
OUT=${OUT:-bin/bench-ab.md}
SIDECAR_ROUNDS=${SIDECAR_ROUNDS:-3}
SIDECAR_SPAWNS=${SIDECAR_SPAWNS:-300}
WORKERS=${WORKERS:-200}
STATE_BASE=${STATE_BASE:-/dev/shm}
SKIP_SIDECAR=${SKIP_SIDECAR:-}
log() { echo "bench-ab: $*" >&2; }

[ "$(id -u)" -eq 0 ] || { log "needs root (a writable cgroup parent)"; exit 1; }
command -v hyperfine >/dev/null || { log "needs hyperfine (apt-get install hyperfine)"; exit 1; }
base_rev=$(git rev-parse --verify "$BASE^{commit}") || { log "BASE=$BASE: not a commit"; exit 1; }
head_rev=$(git rev-parse HEAD)
dirty=""
[ -z "$(git status --porcelain --untracked-files=no)" ] || dirty=" (with uncommitted changes)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hlaunch-benchab.XXXXXX")
parent=hlaunch-benchab-$(basename "$tmp" | tr -dc 'a-zA-Z0-9' | tail -c 6 | tr 'A-Z' 'a-z')$RANDOM
cleanup() {
	local rc=$? d
	set +e
	for d in /sys/fs/cgroup/"$parent" /sys/fs/cgroup/*/"$parent" /sys/fs/cgroup/"$parent"-sc-* /sys/fs/cgroup/*/"$parent"-sc-*; do
		[ -d "$d" ] || continue
		[ -e "$d/cgroup.kill" ] && echo 1 >"$d/cgroup.kill" 2>/dev/null
		find "$d" -name cgroup.procs -exec sh -c 'xargs -r kill -9 <"$1" 2>/dev/null' _ {} \;
		sleep 0.2
		find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
		[ ! -d "$d" ] || log "warning: could not remove $d"
	done
	git worktree remove --force "$tmp/base-src" >/dev/null 2>&1
	rm -rf "$tmp"
	[ -z "${abstate:-}" ] || rm -rf "$abstate"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

build() { # build SRC OUTDIR
	(cd "$1" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$2/" ./cmd/hlaunch ./cmd/hlaunch-sidecar)
}
log "building base $base_rev and head $head_rev$dirty"
git worktree add --detach -q "$tmp/base-src" "$base_rev"
build "$tmp/base-src" "$tmp/base"
build . "$tmp/head"

root=$tmp/hermes
state=$tmp/state
mkdir -p "$root/profiles/b/cache/scratch" "$root/profiles/b/workspace"
printf 'B_MARKER=b\nFIRECRAWL_API_KEY=b-fc\n' >"$root/profiles/b/.env"
chown -R 65534:65534 "$root/profiles/b"
chmod 0755 "$tmp"

cmds=$tmp/cmds.tsv
: >"$cmds"
add() { printf '%s\t%s\n' "$1" "$2" >>"$cmds"; }
for side in base head; do
	hl="$tmp/$side/hlaunch --root $root --state-dir $state-$side"
	add "version/$side" "$tmp/$side/hlaunch version"
	add "none/$side" "$hl exec --scope none -p b -- /bin/true"
	add "cgroup/$side" "$hl exec --scope cgroup --cgroup-parent $parent -p b -- /bin/true"
	add "cgroup-sb/$side" "$hl exec --sandbox --scope cgroup --cgroup-parent $parent -p b -- /bin/true"
done
# The head without its default limits (each set to max), to show what they cost beside the rest of the change.
hl="$tmp/head/hlaunch --root $root --state-dir $state-head"
add "cgroup/head-nolim" "$hl exec --scope cgroup --cgroup-parent $parent --pids max --memory max --cpu-weight max -p b -- /bin/true"
add "cgroup-sb/head-nolim" "$hl exec --sandbox --scope cgroup --cgroup-parent $parent --pids max --memory max --cpu-weight max -p b -- /bin/true"
if command -v bwrap >/dev/null; then
	add "bwrap/anchor" "bwrap --dev-bind / / --unshare-pid --unshare-ipc --unshare-uts --clearenv /bin/true"
fi
# Each command once, so that one that cannot run here fails the A/B before hyperfine starts.
while IFS=$'\t' read -r label cmd; do
	$cmd </dev/null >/dev/null 2>"$tmp/err" || { log "$label failed: $(tail -n 2 "$tmp/err")"; exit 1; }
done <"$cmds"

args=(-N --warmup "$WARMUP" --runs "$((RUNS / ROUNDS))" --export-json "$tmp/hf.json" --style basic)
for r in $(seq "$ROUNDS"); do
	while IFS=$'\t' read -r label cmd; do args+=(-n "$label@$r" "$cmd"); done <"$cmds"
done
log "hyperfine: $(wc -l <"$cmds") commands x $RUNS runs in $ROUNDS rounds"
hyperfine "${args[@]}" >/dev/null

ab=""
if [ -z "$SKIP_SIDECAR" ]; then
	ab=$tmp/ab.json
	abstate=$(mktemp -d "$STATE_BASE/hlaunch-benchab.XXXXXX")
	go test -c -o "$tmp/sidecar.test" ./internal/sidecar
	log "sidecar: $SIDECAR_ROUNDS rounds x $SIDECAR_SPAWNS spawns a side, then $WORKERS idle workers a side"
	# TMPDIR: the benchmark's own temporary directories (the hermes root, the sockets) live in ours, so that
	# the cleanup above removes them even when the benchmark is killed before its own cleanup runs.
	TMPDIR=$tmp HLAUNCH_BENCH_AB=$ab HLAUNCH_BIN=$tmp/head/hlaunch HLAUNCH_BIN_BASE=$tmp/base/hlaunch \
		HLAUNCH_BENCH_PARENT=$parent-sc HLAUNCH_BENCH_STATE_BASE=$abstate HLAUNCH_AB_ROUNDS=$SIDECAR_ROUNDS \
		HLAUNCH_AB_SPAWNS=$SIDECAR_SPAWNS HLAUNCH_AB_WORKERS=$WORKERS \
		"$tmp/sidecar.test" -test.run '^$' -test.bench '^BenchmarkSidecarAB$' -test.benchtime 1x >"$tmp/ab.log" 2>&1 ||
		{ tail -n 20 "$tmp/ab.log" >&2; log "the sidecar A/B failed"; exit 1; }
fi

mkdir -p "$(dirname "$OUT")"
python3 - "$tmp/hf.json" "$base_rev" "$head_rev$dirty" "$RUNS" "$ROUNDS" "$ab" >"$OUT" <<'EOF'
import json, statistics, sys
path, base, head, runs, rounds, ab = sys.argv[1:7]
pooled = {}
for r in json.load(open(path))["results"]:
    label = r["command"].rsplit("@", 1)[0]
    pooled.setdefault(label, []).extend(r["times"])
med = {k: statistics.median(v) * 1000 for k, v in pooled.items()}
bw = med.get("bwrap/anchor")
print(f"A/B of the launch path: base {base[:12]}, head {head[:12]}; medians of {runs} runs each in {rounds} interleaved rounds (one hyperfine run).")
print()
print("| command | base | head | head / base | head / bwrap | head, limits max | head, limits max / base |")
print("|---|---|---|---|---|---|---|")
names = {"version": "`hlaunch version`", "none": "`exec --scope none -p b -- /bin/true`",
         "cgroup": "`exec --scope cgroup -p b -- /bin/true`",
         "cgroup-sb": "`exec --sandbox --scope cgroup -p b -- /bin/true`"}
for key, name in names.items():
    b, h = med[key + "/base"], med[key + "/head"]
    ratio = f"{h / bw:.2f}" if bw and key != "version" else ""
    nl = med.get(key + "/head-nolim")
    nolim = f"{nl:.2f} ms | {nl / b:.3f}" if nl else " | "
    print(f"| {name} | {b:.2f} ms | {h:.2f} ms | {h / b:.3f} | {ratio} | {nolim} |")
if bw:
    print(f"| bwrap (pid+ipc+uts, `--clearenv`) | | {bw:.2f} ms | | 1.00 | | |")
if ab:
    f = json.load(open(ab))
    lb, lh = f["load"]["base"], f["load"]["head"]
    print()
    print(f"The sidecar (`--scope cgroup`, state on {f['state_fs']}, {f['clients']} clients, closed loop, "
          f"base and head alternated in {f['rounds']} rounds of {f['spawns_per_round']} spawns a side, pooled; "
          f"idle workers: {f['workers']} detached `sleep`s a side):")
    print()
    print("| figure | base | head | head / base |")
    print("|---|---|---|---|")
    def row(name, b, h, unit, fmt=".1f"):
        r = f"{h / b:.3f}" if b else ""
        print(f"| {name} | {b:{fmt}}{unit} | {h:{fmt}}{unit} | {r} |")
    row("sidecar spawns/s (pooled)", lb["spawns_per_s"], lh["spawns_per_s"], "", ".0f")
    print(f"| sidecar spawns/s, per round | {', '.join(f'{v:.0f}' for v in lb['round_spawns_per_s'])} | "
          f"{', '.join(f'{v:.0f}' for v in lh['round_spawns_per_s'])} | |")
    row("sidecar spawn p50", lb["p50_ms"], lh["p50_ms"], " ms", ".2f")
    row("sidecar spawn p99", lb["p99_ms"], lh["p99_ms"], " ms", ".2f")
    row("CPU per spawn (sidecar, shims, targets)", lb["cpu_ms_per_spawn"], lh["cpu_ms_per_spawn"], " ms", ".2f")
    for key, what in (("memory", "idle detached worker"), ("sandbox_memory", "idle detached sandboxed worker")):
        mb, mh = f[key]["base"], f[key]["head"]
        per = lambda m, k: m[k] / m["workers"]
        row(f"Pss hlaunch adds per {what} (its {mh['hlaunch_procs'] / mh['workers']:.0f} hlaunch process(es))",
            per(mb, "hlaunch_pss_kib"), per(mh, "hlaunch_pss_kib"), " KiB", ".0f")
        row(f"Pss of the {what} itself", per(mb, "worker_pss_kib"), per(mh, "worker_pss_kib"), " KiB", ".0f")
        row(f"sidecar RSS growth per {what}", per(mb, "sidecar_rss_growth_kib"), per(mh, "sidecar_rss_growth_kib"), " KiB", ".1f")
EOF
cat "$OUT"
