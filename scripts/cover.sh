#!/usr/bin/env bash
# make cover: statement coverage of every package, counting the processes hlaunch re-executes itself as
# (the init stub, the shim) and every CLI and sidecar process the integration suite starts, not only the
# test binaries' own (docs/testing.md, "Coverage").
#
#   1. unit: every package's test binary built with -cover -covermode=atomic -coverpkg=<module>/... and
#      -tags hlaunchcover (internal/coverdir), run from its package directory; its own counters go to
#      unit-self/<package> (-test.gocoverdir), those of the copies of it that it re-executes (a stub, a
#      shim, a child) to unit-child (GOCOVERDIR, and the directory linked in for children started with
#      an environ of their own).
#   2. integration: bin/hlaunch and bin/hlaunch-sidecar built the same way (go build -cover), the
#      directory linked in; the integration suite runs against them, and every CLI, init stub, shim and
#      sidecar process writes its counters to integration/. The stub writes them before it execs its
#      target. A worker's environ never gets GOCOVERDIR (TestCoverDirStaysWithTheRoles).
#   3. go tool covdata: merged into merged/ and cover.out (textfmt), and one table per package: the unit
#      tests' own processes, with their re-executed children, and with the integration suite.
#
# COVER_RUN=<regex> runs only the tests it matches (go test -run, in the unit and integration steps);
# COVER_PKGS (default ./...) names the unit step's packages; COVER_INTEGRATION=0 leaves the integration
# step out. Everything is written under COVER_OUT (default bin/cover), removed at the start. Needs root,
# as make test does. Test failures are reported and counted; the table is printed either way, and the
# exit status is non-zero if a step failed.
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
PYTHON=${PYTHON:-python3}
OUT=${COVER_OUT:-bin/cover}
RUN=${COVER_RUN:-}
PKGS=${COVER_PKGS:-./...}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-10m}
INTEGRATION_TIMEOUT=${INTEGRATION_TIMEOUT:-30m}
MOD=$($GO list -m)
COVER=(-cover -covermode=atomic "-coverpkg=$MOD/..." -tags hlaunchcover)

rm -rf "$OUT"
mkdir -p "$OUT"/{unit-self,unit-child,integration,tests,bin,logs} || exit 1
OUT=$(cd "$OUT" && pwd)
# Workers run as other users (a profile home's owner, throwaway users, 65534) and their stubs write here:
# the path must be searchable and the data directories writable by all. Not sticky: every process of a
# cover build renames its meta-data file over the one there (the runtime's size check never matches it),
# which a sticky directory refuses a process that does not own the file ("operation not permitted", on
# the worker's stderr when it is the stub).
chmod 0755 "$OUT"
chmod 0777 "$OUT"/unit-child "$OUT"/integration
d=$(dirname "$OUT")
while [ "$d" != / ]; do
	[ $((0$(stat -c %a "$d") & 1)) = 1 ] || echo "cover: $d is not searchable by others: workers of other users cannot write their counters" >&2
	d=$(dirname "$d")
done

failed=()
runarg=()
[ -n "$RUN" ] && runarg=(-test.run "$RUN")

unit() {
	local pkgs rc=0
	pkgs=$($GO list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' $PKGS | grep -v -e '/integration$' -e '/integration/') || return 1
	echo "cover: building $(echo "$pkgs" | wc -l) test binaries"
	# One build for all: the test binaries are named after their package's last element (unique here).
	# shellcheck disable=SC2086
	CGO_ENABLED=0 $GO test -c "${COVER[@]}" -ldflags "-X $MOD/internal/coverdir.dir=$OUT/unit-child" -o "$OUT/tests/" $pkgs || return 1
	local pkg dir name bin
	for pkg in $pkgs; do
		dir=$($GO list -f '{{.Dir}}' "$pkg")
		name=${pkg#"$MOD"/}
		name=${name//\//_}
		bin=$OUT/tests/${pkg##*/}.test
		mkdir -p "$OUT/unit-self/$name"
		if (cd "$dir" && GOCOVERDIR=$OUT/unit-child "$bin" -test.count=1 -test.timeout="$UNIT_TIMEOUT" \
			-test.gocoverdir="$OUT/unit-self/$name" "${runarg[@]}" >"$OUT/logs/unit-$name.log" 2>&1); then
			echo "ok   $pkg"
		else
			echo "FAIL $pkg (log: $OUT/logs/unit-$name.log)"
			grep -E '^(--- FAIL|panic:|FAIL)' "$OUT/logs/unit-$name.log" | head -20
			rc=1
		fi
	done
	return "$rc"
}

integration() {
	CGO_ENABLED=0 $GO build -trimpath "${COVER[@]}" -ldflags "-X $MOD/internal/coverdir.dir=$OUT/integration" \
		-o "$OUT/bin/" ./cmd/hlaunch ./cmd/hlaunch-sidecar || return 1
	local args=(-count=1 -timeout "$INTEGRATION_TIMEOUT")
	[ -n "$RUN" ] && args+=(-run "$RUN")
	echo "cover: integration tests against $OUT/bin/hlaunch (log: $OUT/logs/integration.log)"
	HLAUNCH_BIN=$OUT/bin/hlaunch GOCOVERDIR=$OUT/integration $GO test "${args[@]}" ./integration/... \
		>"$OUT/logs/integration.log" 2>&1
	local rc=$?
	grep -E '^(--- FAIL|panic:|ok|FAIL)' "$OUT/logs/integration.log" | head -40
	return "$rc"
}

unit || failed+=(unit)
if [ "${COVER_INTEGRATION:-1}" != 0 ]; then
	integration || failed+=(integration)
fi

# Every unit-self/<package> and the shared directories that hold data (covdata refuses an empty one).
dirs() {
	local d out=()
	for d in "$@"; do
		compgen -G "$d/covmeta.*" >/dev/null && out+=("$d")
	done
	local IFS=,
	echo "${out[*]}"
}
self=$(dirs "$OUT"/unit-self/*)
child=$(dirs "$OUT"/unit-self/* "$OUT"/unit-child)
all=$(dirs "$OUT"/unit-self/* "$OUT"/unit-child "$OUT"/integration)
if [ -z "$all" ]; then
	echo "cover: no coverage data"
	exit 1
fi
mkdir -p "$OUT/merged"
$GO tool covdata merge -i="$all" -o="$OUT/merged" || exit 1
$GO tool covdata textfmt -i="$OUT/merged" -o="$OUT/cover.out" || exit 1
percent() { [ -n "$1" ] && $GO tool covdata percent -i="$1" -pkg="$MOD/..."; }
percent "$self" >"$OUT/percent-unit-self.txt"
percent "$child" >"$OUT/percent-unit-child.txt"
percent "$all" >"$OUT/percent-all.txt"
"$PYTHON" scripts/cover_table.py "$MOD" "$OUT/cover.out" "$OUT/percent-unit-self.txt" \
	"$OUT/percent-unit-child.txt" "$OUT/percent-all.txt" | tee "$OUT/table.md"
echo "cover: $OUT/cover.out (go tool cover -html=$OUT/cover.out), $OUT/table.md"
if [ "${#failed[@]}" -gt 0 ]; then
	echo "cover: FAILED steps: ${failed[*]}"
	exit 1
fi
