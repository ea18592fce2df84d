#!/usr/bin/env bash
# `make bench`: one hyperfine run of hlaunch in every mode side by side with the anchors (the fork+exec
# floor, unshare, bwrap, runc, systemd-run --user --scope against a private test manager), the stop of a
# 200-process tree, the sidecar's latency/throughput/memory/re-adoption, and the Go benchmarks of the hot
# paths. Writes docs/benchmarks.md (scripts/bench_report.py turns the raw results into the tables; the
# sections it does not write, measurements written by hand, are kept).
#
# Everything it creates lives in a temporary directory and under one cgroup parent named
# hlaunch-bench-<random> in every hierarchy (runc's: hlaunch-bench-<random>-runc); all are removed at the end, on failure and ^C too.
# These machines are shared and noisy: compare the ratios from one run, never absolute times across runs.
#
# Knobs: RUNS (hyperfine runs per command, default 200, split over ROUNDS=4 rounds), WARMUP (5 per round), BENCHTIME (go test, 1s),
# OUT (docs/benchmarks.md), SKIP_GO=1 (no Go benchmarks), SKIP_SIDECAR=1, SOAK_SPAWNS (100000), SOAK_RATE (40 spawns/s between the closed-loop windows), SKIP_SOAK=1,
# SOAK_FROM=DIR (render an earlier soak's soak.json, soak-load-*.txt and soak-meta.txt from DIR instead of running it:
# the 100,000-spawn soak takes about 45 minutes and wants a machine that stays quiet for that long),
# BASE_BIN=PATH (an hlaunch built from an older commit, hlaunch-sidecar beside it: BenchmarkIndexedState then
# measures it side by side with this one, interleaved).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-docs/benchmarks.md}
RUNS=${RUNS:-200}
ROUNDS=${ROUNDS:-4}
WARMUP=${WARMUP:-5}
BENCHTIME=${BENCHTIME:-1s}
HL=$(pwd)/bin/hlaunch
export GOFLAGS=${GOFLAGS:-}

log() { echo "bench: $*" >&2; }

# Tools: installed when missing (as root, through apt-get), else reported as skipped.
install_missing() {
	local missing=() t
	for t in hyperfine:hyperfine bwrap:bubblewrap runc:runc crun:crun nsenter:util-linux python3:python3; do
		command -v "${t%%:*}" >/dev/null || missing+=("${t#*:}")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
		log "installing ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2 ||
			log "apt-get install failed; missing tools are reported as skipped"
	else
		log "missing ${missing[*]} (not root or no apt-get): reported as skipped"
	fi
}
install_missing
command -v python3 >/dev/null || { log "python3 is required for the report"; exit 1; }

make -s build

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hlaunch-bench.XXXXXX")
suffix=$(basename "$tmp" | tr -dc 'a-zA-Z0-9' | tail -c 6 | tr 'A-Z' 'a-z')$RANDOM
parent=hlaunch-bench-$suffix
root=$tmp/hermes
state=$tmp/state
notes=$tmp/notes.tsv # label <TAB> why it was skipped
: >"$notes"
skip() { printf '%s\t%s\n' "$1" "$2" >>"$notes"; log "skipped $1: $2"; }

# kill_tree empties a cgroup directory (cgroup.kill, else SIGKILL of every member) and removes it bottom-up.
kill_tree() {
	local d=$1 i f
	[ -d "$d" ] || return 0
	if [ -e "$d/cgroup.kill" ]; then echo 1 >"$d/cgroup.kill" 2>/dev/null || true; fi
	for i in $(seq 50); do
		local left=0
		while IFS= read -r f; do
			if [ -s "$f" ]; then
				left=1
				xargs -r kill -9 <"$f" 2>/dev/null || true
			fi
		done < <(find "$d" -name cgroup.procs 2>/dev/null)
		[ $left -eq 0 ] && break
		sleep 0.1
	done
	find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	[ ! -d "$d" ] || log "warning: could not remove $d"
}

cleanup() {
	local rc=$?
	set +e
	[ -n "${sidecar_pid:-}" ] && kill -9 "$sidecar_pid" 2>/dev/null
	for d in /sys/fs/cgroup/"$parent"{,-runc,-sc} /sys/fs/cgroup/*/"$parent"{,-runc,-sc}; do kill_tree "$d"; done
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The demo root, profile b, as in scripts/demo.sh.
mkdir -p "$root/profiles/b/cache/scratch" "$root/profiles/r/cache/scratch" "$state"
printf 'B_MARKER=b\nFIRECRAWL_API_KEY=b-fc\n' >"$root/profiles/b/.env"
printf 'R_MARKER=r\nFIRECRAWL_API_KEY=r-fc\n' >"$root/profiles/r/.env"
# The path down to the homes is searchable by all, as a hermes root is: a root launcher's worker runs as
# its home's owner (docs/security.md, "Privilege follows the profile"). Profile r stays root's: its worker
# is root, as every unsandboxed worker of a root launcher was before; b's drops to b's owner.
chmod 755 "$tmp" "$root" "$root/profiles"
# A root launcher's sandboxed worker runs as the owner of its profile home and refuses a home owned by
# root (docs/security.md): b belongs to nobody, as a hermes home belongs to its user.
[ "$(id -u)" = 0 ] && chown -R 65534:65534 "$root/profiles/b"

# A runc bundle running the same /bin/true: a rootfs with the binary and its libraries (no busybox), the
# namespaces the bwrap and unshare commands use (mount, pid, ipc, uts), its cgroup beside our parent (hlaunch
# refuses a parent it did not create, so runc gets its own).
make_bundle() {
	local b=$tmp/bundle f
	mkdir -p "$b/rootfs"
	for f in /bin/true $(ldd /bin/true | grep -o '/[^ ]*'); do
		mkdir -p "$b/rootfs$(dirname "$f")"
		cp -L "$f" "$b/rootfs$f"
	done
	(cd "$b" && runc spec)
	python3 - "$b/config.json" "/$parent-runc/c" <<'EOF'
import json, sys
path, cg = sys.argv[1], sys.argv[2]
c = json.load(open(path))
c["process"]["args"] = ["/bin/true"]
c["process"]["terminal"] = False
c["root"]["readonly"] = True
c["linux"]["namespaces"] = [{"type": t} for t in ("pid", "ipc", "uts", "mount")]
c["linux"]["cgroupsPath"] = cg
json.dump(c, open(path, "w"), indent=1)
EOF
	echo "$b"
}

# Commands, as "label<TAB>command". @SD@ marks a command that runs in the private systemd manager's
# cgroup and mount namespaces (internal/systemd BenchmarkHyperfineAnchors replaces it by nsenter).
cmds=$tmp/cmds.tsv
: >"$cmds"
add() { printf '%s\t%s\n' "$1" "$2" >>"$cmds"; }
# try runs a command once before it is benchmarked: a command that cannot run here is skipped, with why.
try() {
	local label=$1 cmd=$2 out
	if out=$($cmd 2>&1 </dev/null); then add "$label" "$cmd"; else skip "$label" "$(echo "$out" | tail -n 2 | tr '\t\n' '  ')"; fi
}
hlx="$HL --root $root --state-dir $state exec"
is_root=0
[ "$(id -u)" -eq 0 ] && is_root=1

add true /bin/true
add env-i "env -i /bin/true"
if command -v unshare >/dev/null; then try unshare "unshare -m -p -f -i -u /bin/true"; else skip unshare "unshare not installed"; fi
if command -v bwrap >/dev/null; then
	try bwrap "bwrap --dev-bind / / --unshare-pid --unshare-ipc --unshare-uts --clearenv /bin/true"
else skip bwrap "bubblewrap not installed"; fi
if [ $is_root -eq 1 ] && command -v runc >/dev/null; then
	bundle=$(make_bundle)
	try runc "runc --root $tmp/runc-state run -b $bundle hlb-$suffix"
	if command -v crun >/dev/null; then
		try crun "crun --root $tmp/crun-state run -b $bundle hlbc-$suffix"
	else skip crun "crun not installed"; fi
else
	skip runc "needs root and runc"
fi
add hl-version "$HL version"
try hl-none "$hlx --scope none -p b -- /bin/true"
try hl-none-sb "$hlx --sandbox --scope none -p b -- /bin/true"
try hl-none-sb-off "$hlx --sandbox --seccomp off --scope none -p b -- /bin/true"
if [ $is_root -eq 1 ]; then
	try hl-cgroup "$hlx --scope cgroup --cgroup-parent $parent -p b -- /bin/true"
	try hl-cgroup-root "$hlx --scope cgroup --cgroup-parent $parent -p r -- /bin/true"
	try hl-cgroup-nolim "$hlx --scope cgroup --cgroup-parent $parent --pids max --memory max --cpu-weight max -p b -- /bin/true"
	try hl-cgroup-sb "$hlx --sandbox --scope cgroup --cgroup-parent $parent -p b -- /bin/true"
	try hl-cgroup-sb-off "$hlx --sandbox --seccomp off --scope cgroup --cgroup-parent $parent -p b -- /bin/true"
else
	skip hl-cgroup "needs root (a writable cgroup parent)"
fi
sd_cmds=$tmp/sd.tsv
: >"$sd_cmds"
printf '%s\t%s\n' nsenter "@SD@ /bin/true" systemd-run "@SD@ systemd-run --user --scope -q /bin/true" \
	hl-systemd "@SD@ $hlx --scope systemd --user -p b -- /bin/true" \
	hl-systemd-sb "@SD@ $hlx --sandbox --scope systemd --user -p b -- /bin/true" >"$sd_cmds"

# hyperfine_args FILE... writes the hyperfine argument list (one per line) for the commands in FILEs. It is
# one hyperfine invocation, but each command appears ROUNDS times (label@1, label@2, ...) in round-robin
# order with RUNS/ROUNDS runs each: hyperfine runs one command's runs back to back, so without rounds a burst
# of load from another engineer's test suite lands on one command only. The report pools each label's runs.
hyperfine_args() {
	local r
	printf '%s\n' -N --warmup "$WARMUP" --runs "$((RUNS / ROUNDS))" --export-json "$tmp/hyperfine.json"
	for r in $(seq "$ROUNDS"); do
		cat "$@" | while IFS=$'\t' read -r label cmd; do
			printf '%s\n' -n "$label@$r" "$cmd"
		done
	done
}

if ! command -v hyperfine >/dev/null; then
	skip hyperfine "hyperfine is not installed (apt-get install hyperfine): no start-latency figures"
else
	ran=0
	if [ $is_root -eq 1 ] && [ -x /lib/systemd/systemd ] && command -v nsenter >/dev/null; then
		hyperfine_args "$cmds" "$sd_cmds" >"$tmp/hf-args"
		log "hyperfine (with a private systemd user manager): $(wc -l <"$cmds") + 4 commands x $RUNS runs in $ROUNDS rounds"
		if HLAUNCH_BENCH_HYPERFINE=$tmp/hf-args go test -count=1 -run '^$' -bench '^BenchmarkHyperfineAnchors$' \
			-benchtime 1x -timeout 60m ./internal/systemd/ >&2; then
			ran=1
		else
			log "the run with the systemd manager failed; running without the systemd commands"
		fi
	fi
	if [ $ran -eq 0 ]; then
		while IFS=$'\t' read -r label _; do skip "$label" "no private systemd user manager here (needs root, systemd, nsenter), or its run failed"; done <"$sd_cmds"
		hyperfine_args "$cmds" >"$tmp/hf-args"
		mapfile -t args <"$tmp/hf-args"
		hyperfine "${args[@]}" >&2
	fi
fi

# Stop to verified-empty of a 200-process tree: a detached worker whose shell starts 199 sleeps,
# then `hlaunch stop`, timed from the CLI's start to its exit (verified empty is what stop reports).
stop_tree() {
	local i rc id cg n t0 t1
	for i in $(seq "${STOP_RUNS:-7}"); do
		rc=$($hlx --detach --scope cgroup --cgroup-parent "$parent" -p b -- \
			/bin/sh -c 'i=0; while [ $i -lt 199 ]; do sleep 1000 & i=$((i+1)); done; wait')
		id=$(echo "$rc" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
		cg=$(echo "$rc" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cgroup"])')
		cg=/sys/fs/cgroup/unified/${cg#/}
		[ -e "$cg/cgroup.procs" ] || cg=/sys/fs/cgroup/${cg#/sys/fs/cgroup/unified/}
		for _ in $(seq 100); do
			n=$(wc -l <"$cg/cgroup.procs")
			[ "$n" -ge 200 ] && break
			sleep 0.05
		done
		t0=$(date +%s%N)
		"$HL" --root "$root" --state-dir "$state" stop --grace 0s "$id" >/dev/null
		t1=$(date +%s%N)
		echo "$n $(((t1 - t0) / 1000))"
	done
}
if [ $is_root -eq 1 ]; then
	log "stop of a 200-process tree"
	stop_tree >"$tmp/stoptree.txt" || skip stop-tree "failed: $(tail -n 1 "$tmp/stoptree.txt" 2>/dev/null)"
else
	skip stop-tree "needs root"
fi

# The sidecar: a real `hlaunch sidecar` process driven over its socket (sidecar BenchmarkSidecarLoad).
if [ "${SKIP_SIDECAR:-0}" = 1 ]; then
	skip sidecar "SKIP_SIDECAR=1"
elif [ $is_root -eq 1 ]; then
	# Twice: state on /dev/shm (a tmpfs, as /run is on systemd hosts: fsync is free there) and on this
	# machine's ext4 (/tmp; /run is not a tmpfs here), because the records' fsyncs and inode churn are a
	# large part of a spawn's cost on a real disk.
	for fs in tmpfs disk; do
		log "sidecar load (state on $fs)"
		base=
		[ "$fs" = tmpfs ] && base=/dev/shm
		out=$tmp/sidecar.json
		[ "$fs" = disk ] && out=$tmp/sidecar-disk.json
		if ! HLAUNCH_BIN=$HL HLAUNCH_BENCH_SIDECAR=$out HLAUNCH_BENCH_PARENT=$parent-sc HLAUNCH_BENCH_STATE_BASE=$base \
			go test -count=1 -run '^$' -bench '^BenchmarkSidecarLoad$' -benchtime 1x -timeout 20m ./internal/sidecar/ >&2; then
			skip "sidecar-$fs" "the sidecar load run failed (see the log above)"
		fi
	done
else
	skip sidecar "needs root (cgroup placement of spawns)"
fi

# The soak: SOAK_SPAWNS spawns (default 100,000) through one sidecar with a gateway's mix, its state
# on a tmpfs and its ledger bounded (integration TestSoak; make test runs it with 2,000). Counts compare its end
# with its start; time figures compare it with a fresh sidecar in interleaved rounds at the end, so the
# machine's load cancels out (bench_report.py's soak()).
if [ "${SKIP_SOAK:-0}" = 1 ]; then
	skip soak "SKIP_SOAK=1"
elif [ -n "${SOAK_FROM:-}" ]; then
	[ -f "$SOAK_FROM/soak.json" ] || { echo "bench: SOAK_FROM=$SOAK_FROM: no soak.json there" >&2; exit 2; }
	log "soak: rendering the earlier run in $SOAK_FROM"
	cp "$SOAK_FROM"/soak.json "$tmp/"
	cp "$SOAK_FROM"/soak-load-*.txt "$SOAK_FROM"/soak-meta.txt "$tmp/" 2>/dev/null || true
elif [ $is_root -eq 1 ]; then
	log "soak: ${SOAK_SPAWNS:-100000} spawns through one sidecar (load before: $(cut -d' ' -f1-3 /proc/loadavg))"
	echo "$(cut -d' ' -f1-3 /proc/loadavg)" >"$tmp/soak-load-before.txt"
	echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), started $(date -u +%FT%TZ)" >"$tmp/soak-meta.txt"
	if ! HLAUNCH_BIN=$HL HLAUNCH_SOAK_SPAWNS=${SOAK_SPAWNS:-100000} HLAUNCH_SOAK_RATE=${SOAK_RATE:-40} HLAUNCH_SOAK_REPORT=$tmp/soak.json \
		go test -count=1 -run '^TestSoak$' -timeout 6h ./integration/ >&2; then
		skip soak "the soak run failed (see the log above)"
	fi
	echo "$(cut -d' ' -f1-3 /proc/loadavg)" >"$tmp/soak-load-after.txt"
else
	skip soak "needs root (cgroup placement of spawns)"
fi

# Go benchmarks of the hot paths, allocations reported.
if [ "${SKIP_GO:-0}" != 1 ]; then
	log "go test -bench (benchtime $BENCHTIME)"
	HLAUNCH_BIN=$HL HLAUNCH_BIN_BASE=${BASE_BIN:-} go test -count=1 -run='^$' -bench=. -benchmem -benchtime="$BENCHTIME" -timeout 30m \
		$(go list ./... | grep -v -e /clients/) 2>&1 | tee "$tmp/gobench.txt" | grep -E '^(Benchmark|ok|FAIL|---)' >&2 || true
else
	: >"$tmp/gobench.txt"
fi

python3 scripts/bench_report.py --dir "$tmp" --hl "$HL" --root "$root" --state "$state" --parent "$parent" \
	--runs "$RUNS" --rounds "$ROUNDS" --warmup "$WARMUP" --benchtime "$BENCHTIME" --keep "$OUT" >"$tmp/out.md"
mv "$tmp/out.md" "$OUT"
log "wrote $OUT"
