#!/bin/bash
# sections.sh - the guest lane's sections (run.sh calls sec_<name>). Each test section runs go test
# binaries (go test -c) through test2json and writes one go test -json log per binary to
# out/<kind>--<package>.json; the host counts them in make test's summary (scripts/guest/lane.sh).
#
# Host kinds (docs/testing.md's table): guest-root (root on a pure-v2 host with systemd as PID 1),
# guest-alice (a user with linger: her own manager, run from it), guest-bob (a user with no manager).
# Which tests run for which kind is decided here, by name, so that nothing is skipped at run time:
# hostkinds.sh holds the lists and why.
VT=/var/lib/vmtest
. /mnt/share/guest/hostkinds.sh
SYSPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# gotest KIND PKGDIR RUNNER [go test flags...]: the test binary of PKGDIR (tests/<dir with _>.test) run
# in $VT/src/PKGDIR by RUNNER (as_root, as_alice, as_bob), its -json log to out/KIND--<dir>.json.
gotest() {
	local kind=$1 dir=$2 runner=$3
	shift 3
	local bin=$VT/tests/${dir//\//_}.test
	local log=$OUT/$kind--${dir//\//_}.json
	echo "+ $kind $dir: $*"
	"$runner" "$VT/src/$dir" "$VT/test2json" -t -p "guest/$kind/$dir" "$bin" -test.v=test2json -test.count=1 \
		-test.timeout="$GO_TIMEOUT" "$@" >"$log" 2>"$log.stderr"
	local rc=$?
	# A runner that failed before the binary said anything (systemd-run, setpriv) is a failure too.
	if [ $rc -ne 0 ] && ! grep -q '"Action":"fail"' "$log"; then
		printf '{"Action":"fail","Package":"guest/%s/%s"}\n' "$kind" "$dir" >>"$log"
	fi
	echo "  rc=$rc ($(grep -c '"Action":"pass","Package":"[^"]*","Test"' "$log") passed," \
		"$(grep -c '"Action":"fail","Package":"[^"]*","Test"' "$log") failed," \
		"$(grep -c '"Action":"skip","Package":"[^"]*","Test"' "$log") skipped)"
}

# The runners: DIR then the command. HLAUNCH_BIN is the installed binary, as a host would have it. The
# soak runs its shortest form here (the build machine runs the 2,000 spawns; TCG is ~10x slower).
as_root() {
	local dir=$1
	shift
	(cd "$dir" && env -i PATH=$SYSPATH HOME=/root LANG=C.UTF-8 CI="$CI" HLAUNCH_BIN=/usr/local/bin/hlaunch \
		HLAUNCH_SOAK_SPAWNS=400 "$@")
}

# alice's tests run as a service of her own manager (with linger, it runs from boot), the way a gateway
# of hers would: in her delegated subtree, with her bus.
as_alice() {
	local dir=$1
	shift
	setpriv --reuid=1001 --regid=1001 --init-groups env -i PATH=$SYSPATH HOME=/home/alice LANG=C.UTF-8 \
		XDG_RUNTIME_DIR=/run/user/1001 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1001/bus \
		systemd-run --user --wait --pipe --quiet --collect -p Delegate=yes --working-directory="$dir" \
		--setenv=CI="$CI" --setenv=HLAUNCH_BIN=/usr/local/bin/hlaunch --setenv=LANG=C.UTF-8 -- "$@"
}

# bob has no manager and no runtime directory: a plain process of his, started by root.
as_bob() {
	local dir=$1
	shift
	(cd "$dir" && setpriv --reuid=1002 --regid=1002 --init-groups env -i PATH=$SYSPATH HOME=/home/bob \
		LANG=C.UTF-8 CI="$CI" HLAUNCH_BIN=/usr/local/bin/hlaunch "$@")
}

units() { # the unit test binaries present, as package directories
	local f
	for f in "$VT"/tests/*.test; do
		f=$(basename "$f" .test)
		[ "$f" = integration ] || echo "${f//_//}"
	done
}

sec_info() {
	local u
	hlaunch doctor
	for u in alice bob; do
		echo "--- doctor as $u"
		[ $u = alice ] && as_alice /tmp /usr/local/bin/hlaunch doctor
		[ $u = bob ] && as_bob /tmp /usr/local/bin/hlaunch doctor
	done
	cat /proc/self/cgroup
	systemctl status user@1001.service --no-pager | head -5
}

sec_unit_root() {
	local d
	for d in $(units); do gotest guest-root "$d" as_root ${ROOT_SKIP_UNIT:+-test.skip="$ROOT_SKIP_UNIT"}; done
}

sec_integration_root() {
	gotest guest-root integration as_root ${ROOT_SKIP_INTEGRATION:+-test.skip="$ROOT_SKIP_INTEGRATION"}
}

sec_alice() {
	local d
	for d in $(units); do
		[ -n "${ALICE_RUN_UNIT[$d]:-}" ] && gotest guest-alice "$d" as_alice -test.run="${ALICE_RUN_UNIT[$d]}"
	done
	gotest guest-alice integration as_alice -test.run="$ALICE_RUN_INTEGRATION"
}

sec_bob() {
	gotest guest-bob integration as_bob -test.run="$BOB_RUN_INTEGRATION"
}

# The reboot: phase 1 starts a detached worker and keeps its token; phase 2 (a new boot) puts a stranger
# at the same PID and checks that the token verifies to nothing and signals nothing.
sec_reboot_issue() {
	gotest guest-root-boot1 integration as_root -test.run='^TestGuestRebootIssue$'
}

sec_reboot_check() {
	gotest guest-root-boot2 integration as_root -test.run='^TestGuestRebootRefused$'
}
