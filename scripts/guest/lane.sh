#!/usr/bin/env bash
# lane.sh - the guest lane of make test: hlaunch's tests on a production-shaped host, a Debian 12 guest
# with systemd as PID 1 and pure cgroup v2, booted with qemu.
#
#   1. the image (scripts/guest/image.sh: cached under $CACHE, rebuilt when its recipe changes);
#   2. a copy of this checkout's files (tracked and untracked, not ignored) in a work directory, where the
#      binaries and every package's test binary are built (static, go test -c) with test2json;
#   3. one boot of a copy of the image (-smp 2; TCG unless the host has real VMX/SVM), whose baked unit
#      runs scripts/guest/vm/run.sh from a 9p share: phase 1 sections, a reboot, phase 2 sections;
#   4. the guest's go test -json logs copied to $LOGDIR/guest-*.json, where scripts/test.sh counts them.
# qemu is waited for and killed by PID at $GUEST_TIMEOUT; the work directory is removed on every exit, so
# nothing but the cache stays behind on this machine (no loop device, no mount, no process).
#
# Environment: CACHE, LOGDIR (default bin/test-logs), GUEST_TIMEOUT (s, the whole lane, default 2280: 38 min),
# GUEST_KEEP=1 keeps the work directory (its path is printed), SECTIONS1/SECTIONS2 override the sections,
# ACCEL=kvm|tcg. Exit status: 0 when the guest ran to its end (test results are in the logs), 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOP=$(pwd)
LOGDIR=${LOGDIR:-bin/test-logs}
case $LOGDIR in /*) ;; *) LOGDIR=$TOP/$LOGDIR ;; esac
CACHE=${CACHE:-/var/cache/hlaunch-vm}
GUEST_TIMEOUT=${GUEST_TIMEOUT:-2280}
SECTIONS1=${SECTIONS1:-info alice bob reboot-issue unit-root integration-root}
SECTIONS2=${SECTIONS2:-reboot-check}
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start))s"; }
say() { echo "guest: $* ($(elapsed))"; }

# One guest at a time on this machine: under TCG a guest takes both CPUs. A second lane waits here (qemu
# inherits the lock, so it is held until the guest is gone).
mkdir -p "$CACHE"
exec 8>"$CACHE/lane.lock"
if ! flock -n 8; then
	say "another guest lane runs on this machine: waiting for it (HLAUNCH_GUEST=0 leaves the lane out)"
	flock 8
fi
start=$(date +%s) # GUEST_TIMEOUT counts from here

WORK=$(mktemp -d "${TMPDIR:-/tmp}/hlaunch-guest.XXXXXX")
QPID=
cleanup() {
	if [ -n "$QPID" ] && kill -0 "$QPID" 2>/dev/null; then
		kill "$QPID" 2>/dev/null || true
		sleep 2
		kill -9 "$QPID" 2>/dev/null || true
		wait "$QPID" 2>/dev/null || true
	fi
	if [ "${GUEST_KEEP:-0}" = 1 ]; then echo "guest: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "image"
IMAGE=$(CACHE=$CACHE scripts/guest/image.sh | tail -1)

say "build in $WORK/src"
SRC=$WORK/src
SHARE=$WORK/share
mkdir -p "$SRC" "$SHARE/bin" "$SHARE/tests" "$SHARE/out"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -C "$SRC" -xf -
(
	cd "$SRC"
	export CGO_ENABLED=0
	go build -trimpath -o "$SHARE/bin/" ./cmd/hlaunch ./cmd/hlaunch-sidecar
	go build -trimpath -o "$SHARE/bin/test2json" cmd/test2json
	# Every package with tests; the guest-only integration tests are behind the "guest" build tag.
	for p in $(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{end}}' ./...); do
		rel=${p#"$SRC"/}
		go test -c -trimpath -tags guest -o "$SHARE/tests/${rel//\//_}.test" "./$rel"
	done
)
cp -r scripts/guest/vm "$SHARE/guest"
(cd "$SRC" && tar -cf - --exclude=bin .) | (mkdir -p "$SHARE/src" && tar -C "$SHARE/src" -xf -)
cat >"$SHARE/guest/config" <<EOF
SECTIONS1="$SECTIONS1"
SECTIONS2="$SECTIONS2"
PHASES=$([ -n "$SECTIONS2" ] && echo 2 || echo 1)
CI=${CI:-}
GO_TIMEOUT=${GUEST_GO_TIMEOUT:-20m}
EOF

if [ -z "${ACCEL:-}" ]; then
	# Nested PVM (this kind of build machine) has /dev/kvm but no vmx/svm: a stock kernel hangs there.
	if grep -qwE 'vmx|svm' /proc/cpuinfo && [ -w /dev/kvm ]; then ACCEL=kvm; else ACCEL=tcg; fi
fi
case $ACCEL in
kvm) accel=(-enable-kvm -cpu host) ;;
*) accel=(-accel tcg,thread=multi -cpu max) ;;
esac
cp --sparse=always "$IMAGE/vm.img" "$WORK/run.img"
# no_timer_check: under TCG on a loaded machine the kernel's IO-APIC timer check fails and it panics at
# 0.06 s ("IO-APIC + timer doesn't work"). -no-reboot: the guest's reboot (phase 1 -> 2) ends this qemu
# and the lane boots the same disk again in a fresh one (a real new boot: new boot id, PIDs from 1); a
# reboot inside one TCG qemu stalled the second boot's CPU 1 (rcu_preempt stalls). A boot that ends with
# neither marker (a panic: panic=5) is tried once more.
boots=0 retries=0
while :; do
	boots=$((boots + 1))
	say "boot $boots ($ACCEL); serial: $WORK/serial.log"
	echo "=== lane: boot $boots" >>"$WORK/serial.log"
	qemu-system-x86_64 "${accel[@]}" -m 3072 -smp 2 -no-reboot \
		-kernel "$IMAGE/vmlinuz" -initrd "$IMAGE/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 quiet no_timer_check panic=5" \
		-drive "file=$WORK/run.img,if=virtio,format=raw" \
		-virtfs "local,path=$SHARE,mount_tag=share,security_model=none,id=share" \
		-nic none -display none -monitor none -serial "file:$WORK/serial.log.boot" </dev/null &
	QPID=$!
	timedout=0
	while kill -0 "$QPID" 2>/dev/null; do
		if [ $(($(date +%s) - start)) -gt "$GUEST_TIMEOUT" ]; then
			say "TIMEOUT after ${GUEST_TIMEOUT}s: killing qemu $QPID"
			timedout=1
			break
		fi
		sleep 5
	done
	if kill -0 "$QPID" 2>/dev/null; then
		kill "$QPID"; sleep 2; kill -9 "$QPID" 2>/dev/null || true
	fi
	wait "$QPID" 2>/dev/null || true
	QPID=
	cat "$WORK/serial.log.boot" >>"$WORK/serial.log" 2>/dev/null || true
	[ "$timedout" = 0 ] || break
	[ -f "$SHARE/out/finished" ] && break
	if [ -f "$SHARE/out/rebooting" ]; then
		mv "$SHARE/out/rebooting" "$SHARE/out/rebooted"
		continue
	fi
	[ "$retries" = 0 ] || break
	retries=1
	say "the guest stopped without finishing a phase: booting it once more"
done
say "guest stopped"
sed 's/^/guest: /' "$SHARE/out/progress.log" 2>/dev/null || true

mkdir -p "$LOGDIR/guest"
rm -rf "${LOGDIR:?}/guest/"* "$LOGDIR"/guest-*.json
cp -r "$SHARE/out/." "$LOGDIR/guest/"
cp "$WORK/serial.log" "$LOGDIR/guest/serial.log"
for f in "$SHARE"/out/*.json; do
	[ -e "$f" ] && cp "$f" "$LOGDIR/$(basename "$f")" # guest-<kind>--<package>.json
done
# Which tests ran for which host kind: one line per test (kind, package, test, result), and the counts.
python3 - "$LOGDIR/guest" "$SHARE"/out/*.json <<'PY' || true
import collections, json, os, sys
out, rows, counts = sys.argv[1], [], collections.Counter()
for path in sys.argv[2:]:
    for line in open(path, errors="replace"):
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("Test") and "/" not in ev["Test"] and ev.get("Action") in ("pass", "fail", "skip"):
            kind, pkg = ev["Package"].split("/", 2)[1:]
            rows.append(f"{kind}\t{pkg}\t{ev['Test']}\t{ev['Action']}")
            counts[(kind, ev["Action"])] += 1
with open(os.path.join(out, "ran-where.tsv"), "w") as f:
    f.write("\n".join(sorted(rows)) + "\n")
for kind in sorted({k for k, _ in counts}):
    print(f"guest: {kind}: {counts[(kind, 'pass')]} passed, {counts[(kind, 'fail')]} failed, {counts[(kind, 'skip')]} skipped")
PY
if [ ! -f "$SHARE/out/finished" ]; then
	say "the guest did not finish its run: see $LOGDIR/guest/serial.log and progress.log"
	tail -30 "$WORK/serial.log" | sed 's/^/guest serial: /'
	exit 1
fi
say "done; logs in $LOGDIR/guest (ran-where.tsv: each test and the host kind it ran for)"
