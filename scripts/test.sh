#!/usr/bin/env bash
# The whole test suite, as `make test` runs it: gofmt and go vet, unit tests, integration tests (real kernel, real
# systemd), Python client tests, and a short run of every fuzz target. Every step runs even when an earlier
# one failed, so one run shows everything that is wrong; the exit status is non-zero if any step failed.
#
# Go test output is kept as `go test -json` logs in $LOGDIR and printed as `go test -v` would. With CI=true
# a test that reports SKIP fails the run: CI runs as root on a full machine, where a skip means a test did
# not check what it claims to (docs/testing.md). HLAUNCH_ALLOW_SKIP (a regex over "pkg.TestName") exempts a test
# by name; leave it empty unless a skip is understood and written down.
#
# The guest lane (scripts/guest/lane.sh) runs last: the unit and integration tests again, in a Debian 12
# guest with systemd as PID 1 and pure cgroup v2 (as root, as a linger user, as a user without a manager,
# and across a reboot); its go test -json logs are counted with the others. HLAUNCH_GUEST=0 leaves it out
# locally; with CI=true it always runs.
#
# The last line is "summary: N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."

LOGDIR=${LOGDIR:-bin/test-logs}
FUZZTIME=${FUZZTIME:-5s}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-10m}
INTEGRATION_TIMEOUT=${INTEGRATION_TIMEOUT:-15m}
PYTHON=${PYTHON:-python3}
mkdir -p "$LOGDIR"
rm -rf "$LOGDIR"/*.json "$LOGDIR"/*.counts "$LOGDIR"/guest

# Tests that start hlaunch as a separate process (integration, the Python client's sidecar) use this binary.
make -s build || exit 1
HLAUNCH_BIN=$(pwd)/bin/hlaunch
export HLAUNCH_BIN

failed_steps=()
extra_pass=0
extra_fail=0

step() {
	local name=$1
	shift
	echo "=== step $name"
	if "$@"; then
		echo "=== step $name: ok"
	else
		echo "=== step $name: FAILED"
		failed_steps+=("$name")
	fi
}

gotest() { # gotest LOGNAME go-test-args...
	local log=$1
	shift
	go test -json "$@" 2>&1 | tee "$LOGDIR/$log.json" | "$PYTHON" scripts/gotest-report.py stream
}

# vet: gofmt (an unformatted file fails the run), go vet and staticcheck, as make lint and make check run
# them (staticcheck is installed into bin/ at its pinned version by make).
vet() {
	local out
	out=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*'))
	if [ -n "$out" ]; then
		echo "gofmt -l:" >&2
		echo "$out" >&2
		return 1
	fi
	go vet ./... || return 1
	make -s "$(pwd)/bin/staticcheck" || return 1
	bin/staticcheck ./...
}

unit() {
	local pkgs
	pkgs=$(go list ./... | grep -v -e '/integration$' -e '/integration/') || return 1
	# shellcheck disable=SC2086
	gotest unit -count=1 -timeout "$UNIT_TIMEOUT" $pkgs
}

# The non-integration packages again under the race detector. Its log is kept apart from the
# counted logs (every test in it already counts once in "unit"); the step counts as one test.
race() {
	local pkgs
	pkgs=$(go list ./... | grep -v -e '/integration$' -e '/integration/') || return 1
	# shellcheck disable=SC2086
	if go test -race -count=1 -timeout "$UNIT_TIMEOUT" $pkgs >"$LOGDIR/race.log" 2>&1; then
		grep -E '^(ok|FAIL|---)' "$LOGDIR/race.log" || true
		extra_pass=$((extra_pass + 1))
	else
		cat "$LOGDIR/race.log"
		extra_fail=$((extra_fail + 1))
		return 1
	fi
}

integration() {
	if ! find integration -name '*_test.go' | grep -q .; then
		echo "integration: no integration tests yet"
		return 0
	fi
	gotest integration -count=1 -timeout "$INTEGRATION_TIMEOUT" ./integration/...
}

# The Python client as a gateway developer gets it: the wheel of `make dist` (standard library only)
# pip-installed offline into a fresh virtual environment without system packages, exactly as the client's
# README says, then its tests run against a real sidecar from that installed package, not from the source
# tree. Also: an editable install imports; mypy --strict is clean on the package and the gateway example,
# accepts tests/typecheck/good.py and refuses the misspelt fields of tests/typecheck/bad_*.py; the TypedDicts
# are what scripts/gen_py_types.py generates from docs/schema.
SYSPYTHON=${SYSPYTHON:-/usr/bin/python3}
python_tests() {
	if ! find clients/python -name 'test*.py' 2>/dev/null | grep -q .; then
		echo "python: no Python client tests yet"
		return 0
	fi
	local venv rc=0
	venv=$(mktemp -d)
	python_tests_in "$venv" || rc=1
	rm -rf "$venv" clients/python/build clients/python/*.egg-info # setuptools builds in the source tree
	return "$rc"
}

# mypy --strict must accept tests/typecheck/good.py and refuse each tests/typecheck/bad_*.py, naming its misspelt
# field: the TypedDicts catch a wrong spec or record field before anything runs.
python_typecheck() {
	local rc=0 f out
	MYPYPATH=clients/python mypy --strict --no-incremental clients/python/tests/typecheck/good.py || rc=1
	for f in clients/python/tests/typecheck/bad_*.py; do
		if out=$(MYPYPATH=clients/python mypy --strict --no-incremental "$f" 2>&1); then
			echo "python: mypy accepted $f, which misspells a field" >&2
			rc=1
		elif ! echo "$out" | grep -q 'typeddict-item'; then
			echo "python: mypy refused $f for another reason than its misspelt field: $out" >&2
			rc=1
		fi
	done
	return "$rc"
}

python_tests_in() {
	local venv=$1 rc=0 counts
	counts="$(pwd)/$LOGDIR/python.counts"
	"$SYSPYTHON" scripts/gen_py_types.py --check || rc=1
	local wheel
	wheel=$("$SYSPYTHON" scripts/py_wheel.py "$venv/dist") || return 1
	"$SYSPYTHON" -m venv "$venv/env" || return 1
	"$venv/env/bin/pip" install -q --no-index "$wheel" || return 1
	"$SYSPYTHON" -m venv --system-site-packages "$venv/editable" || return 1
	"$venv/editable/bin/pip" install -q --no-index --no-build-isolation -e ./clients/python || return 1
	local where
	where=$(cd / && "$venv/editable/bin/python" -c 'import hlaunch_client; print(hlaunch_client.__file__)') || return 1
	case $where in "$(pwd)"/clients/python/hlaunch_client/*) echo "python: editable install imports $where" ;;
	*) echo "python: the editable install imports $where, not the source tree" >&2; rc=1 ;; esac
	if command -v mypy >/dev/null; then
		mypy --strict clients/python/hlaunch_client clients/python/examples/gateway.py clients/python/examples/acceptance.py || rc=1
		python_typecheck || rc=1
	else
		echo "python: mypy not installed (Debian package mypy)" >&2
		rc=1
	fi
	# The tests and the example are copied out of the source tree so that the import finds the installed
	# package only.
	cp -r clients/python/tests clients/python/examples "$venv/"
	(cd "$venv" && HLAUNCH_CLIENT_INSTALLED=1 "$venv/env/bin/python" - "$counts") <<'PY' || rc=1
import os, sys, unittest
suite = unittest.defaultTestLoader.discover("tests", pattern="test*.py", top_level_dir=".")
res = unittest.TextTestRunner(verbosity=2).run(suite)
bad = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
with open(sys.argv[1], "w") as f:
    f.write(f"{res.testsRun - bad - len(res.skipped)} {bad} {len(res.skipped)}\n")
# In CI a skipped client test is a failed one, as for Go tests: it drives a real sidecar, so a skip means
# something the suite claims was never checked.
if os.environ.get("CI") == "true" and res.skipped:
    print(f"python: {len(res.skipped)} test(s) skipped; in CI every test must run", file=sys.stderr)
    sys.exit(1)
sys.exit(0 if bad == 0 and res.testsRun > 0 else 1)
PY
	return "$rc"
}

# make install into an empty prefix, man, completion, --version; make uninstall leaves it empty.
install_roundtrip() {
	if scripts/install_test.sh; then
		extra_pass=$((extra_pass + 1))
	else
		extra_fail=$((extra_fail + 1))
		return 1
	fi
}

fuzz() {
	local out
	out=$(mktemp)
	FUZZTIME=$FUZZTIME scripts/fuzz.sh 2>&1 | tee "$out"
	local rc=${PIPESTATUS[0]}
	local p f
	read -r p f < <(sed -nE 's/^fuzz: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/p' "$out" | tail -1)
	extra_pass=$((extra_pass + ${p:-0}))
	extra_fail=$((extra_fail + ${f:-0}))
	rm -f "$out"
	return "$rc"
}

guest() {
	if [ "${HLAUNCH_GUEST:-1}" = 0 ] && [ "${CI:-}" != "true" ]; then
		echo "guest: left out (HLAUNCH_GUEST=0)"
		return 0
	fi
	LOGDIR=$LOGDIR scripts/guest/lane.sh
}

step vet vet
step unit unit
step race race
step integration integration
step python python_tests
step install install_roundtrip
step fuzz fuzz
step guest guest

# Counts and the CI skip rule.
report_args=()
if [ "${CI:-}" = "true" ]; then
	report_args+=(--no-skip)
	if [ -n "${HLAUNCH_ALLOW_SKIP:-}" ]; then report_args+=("--allow-skip=$HLAUNCH_ALLOW_SKIP"); fi
fi
logs=("$LOGDIR"/*.json)
[ -e "${logs[0]}" ] || logs=()
echo "=== report"
report=$("$PYTHON" scripts/gotest-report.py summary "${report_args[@]}" "${logs[@]}")
report_rc=$?
echo "$report" | sed '$d'
counts=$(echo "$report" | tail -1)
passed=$(echo "$counts" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["passed"])')
failed=$(echo "$counts" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["failed"])')
skipped=$(echo "$counts" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["skipped"])')
if [ -f "$LOGDIR/python.counts" ]; then
	read -r pp pf ps <"$LOGDIR/python.counts"
	passed=$((passed + pp))
	failed=$((failed + pf))
	skipped=$((skipped + ps))
fi
passed=$((passed + extra_pass))
failed=$((failed + extra_fail))
[ "$report_rc" -eq 0 ] || failed_steps+=("report")
# A step that failed without a counted test failure (vet, a build error) still counts once.
for s in "${failed_steps[@]}"; do
	case $s in vet | guest) failed=$((failed + 1)) ;; esac
done

printf '%s %s %s\n' "$passed" "$failed" "$skipped" >"$LOGDIR/summary.counts"
if [ "${#failed_steps[@]}" -gt 0 ]; then
	echo "test: FAILED steps: ${failed_steps[*]}"
fi
echo "summary: $passed passed, $failed failed, $skipped skipped"
[ "${#failed_steps[@]}" -eq 0 ]
