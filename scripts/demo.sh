#!/usr/bin/env bash
# `make demo`: a small hermes root with two profiles in a temporary directory, and hlaunch showing that
# profile b's child gets b's environment and nothing of launch profile a's, even though a's values sit in
# the launcher's own environment (the hermes gateway bug hlaunch exists to end). Then a detached worker,
# its receipt, status and stop. Everything it creates is removed at the end, on failure too.
set -euo pipefail
cd "$(dirname "$0")/.."

HL=${HLAUNCH:-$(pwd)/bin/hlaunch}
[ -x "$HL" ] || make -s build

demo=$(mktemp -d "${TMPDIR:-/tmp}/hlaunch-demo.XXXXXX")
root=$demo/hermes
state=$demo/state
# Our own cgroup parent, so the demo never writes next to anything else on the machine.
parent=hlaunch-demo-$(basename "$demo" | tr -dc 'a-zA-Z0-9' | tail -c 7)
worker=

cleanup() {
	local rc=$?
	set +e
	if [ -n "$worker" ]; then "$HL" --root "$root" --state-dir "$state" stop "$worker" --grace 1s >/dev/null 2>&1; fi
	# Interrupted before the worker's id was known (a closed pipe mid-receipt): the parent is the demo's
	# own, so whatever still runs under it is the demo's worker. End it through its cgroup.
	for d in /sys/fs/cgroup/"$parent"/*/ /sys/fs/cgroup/*/"$parent"/*/; do
		[ -e "$d/cgroup.kill" ] && echo 1 >"$d/cgroup.kill" 2>/dev/null
	done
	sleep 0.2
	"$HL" --root "$root" --state-dir "$state" gc --cgroup-parent "$parent" >/dev/null 2>&1
	# The parent cgroup we named, in every hierarchy that has it; rmdir only ever removes an empty one.
	for d in /sys/fs/cgroup/"$parent" /sys/fs/cgroup/*/"$parent"; do
		[ -d "$d" ] || continue
		for w in "$d"/*/; do [ -d "$w" ] && rmdir "$w" 2>/dev/null; done
		rmdir "$d" 2>/dev/null
	done
	rm -rf "$demo"
	exit "$rc"
}
trap cleanup EXIT
# Interrupted (Ctrl-C, a closed pipe such as `make demo | head`): still clean up, through the EXIT trap.
trap 'exit 130' INT TERM HUP PIPE

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
run() { printf '$ hlaunch %s\n' "${*:2}"; "$@"; }

# Two profiles, laid out as hermes lays them out (docs/hermes-contract.md).
for p in a b; do
	mkdir -p "$root/profiles/$p/cache/scratch" "$root/profiles/$p/logs" "$root/profiles/$p/workspace"
	: >"$root/profiles/$p/config.yaml"
done
cat >"$root/profiles/a/.env" <<'ENV'
# launch profile a
A_MARKER=a
HERMES_MODEL=a-model
TERMINAL_ENV=docker
FIRECRAWL_API_KEY=a-fc
ENV
cat >"$root/profiles/b/.env" <<'ENV'
# served profile b
B_MARKER=b
FIRECRAWL_API_KEY=b-fc
# Tier 1: never passed to any child, whichever profile holds it
GH_TOKEN=ghp_demo_not_a_real_token
ENV

# The launcher's environment as the gateway has it: launch profile a's .env mirrored in, its HERMES_HOME,
# lower-case variants, and a credential that exists only in the environment (put there by systemd or a shell).
launcher_env=(
	A_MARKER=a HERMES_MODEL=a-model TERMINAL_ENV=docker FIRECRAWL_API_KEY=a-fc
	hermes_model=a-model firecrawl_api_key=a-fc
	HERMES_HOME="$root/profiles/a" OPENAI_API_KEY=sk-ambient-only
)

scope=cgroup
if [ "$(id -u)" -ne 0 ]; then
	scope=auto # a raw cgroup needs root or a delegated subtree; auto finds the user manager or says why not
fi
hl() { env "${launcher_env[@]}" "$HL" --root "$root" --state-dir "$state" "$@"; }

say "the launcher's environment holds launch profile a's values"
printf '  %s\n' "${launcher_env[@]}"

say "what a child of profile b would get, and where each entry comes from (credentials shown as ***)"
run hl env -p b --explain

say "a real child of profile b, in its own cgroup (--scope $scope), printing its environment"
out=$(hl exec -p b --scope "$scope" --cgroup-parent "$parent" -- env)
printf '$ hlaunch exec -p b --scope %s -- env\n' "$scope"
echo "$out" | sort

say "checking the child's view"
ok=true
expect() { if grep -qx -- "$1" <<<"$out"; then echo "  ok: $1"; else echo "  MISSING: $1"; ok=false; fi; }
absent() { if grep -qi -- "^$1=" <<<"$out"; then echo "  LEAKED: $1"; ok=false; else echo "  ok: no $1"; fi; }
expect "B_MARKER=b"
expect "FIRECRAWL_API_KEY=b-fc"
expect "HERMES_HOME=$root/profiles/b"
for n in A_MARKER HERMES_MODEL TERMINAL_ENV GH_TOKEN OPENAI_API_KEY; do absent "$n"; done
$ok || { echo "demo: the child's environment is wrong" >&2; exit 1; }

say "the child's first look at /proc/self/cgroup: already in its own cgroup"
run hl exec -p b --scope "$scope" --cgroup-parent "$parent" -- cat /proc/self/cgroup

say "a detached worker: the receipt is its identity"
receipt=$(hl exec -p b --scope "$scope" --cgroup-parent "$parent" --detach -- sleep 300)
echo "$receipt"
worker=$(sed -nE 's/^ *"id": "([^"]+)".*/\1/p' <<<"$receipt" | head -1)
[ -n "$worker" ] || { echo "demo: no worker id in the receipt" >&2; exit 1; }

say "status (exit 0: running, verified)"
run hl status "$worker"

say "ps"
run hl ps

say "stop: SIGTERM, then the whole cgroup; exit 0 only when verified empty"
run hl stop "$worker" --grace 2s
stopped=$worker
worker=

say "status after stop (exit 1: exited)"
rc=0
hl status "$stopped" || rc=$?
echo "(exit $rc)"
[ "$rc" -eq 1 ] || { echo "demo: status after stop exited $rc, want 1" >&2; exit 1; }

say "demo done; removing $demo"
