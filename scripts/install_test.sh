#!/usr/bin/env bash
# The install round trip, as a user does it: make install into an empty prefix, read a manual page, load
# the bash completion, ask the installed binaries their version; make uninstall leaves the prefix empty.
# Run by scripts/test.sh (step "install"); prints "install: ok" or the first thing that is wrong.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "install: FAILED: $*" >&2; exit 1; }

make -s install PREFIX="$prefix" >/dev/null || fail "make install PREFIX=$prefix"
page=$(MANWIDTH=100 man -M "$prefix/share/man" hlaunch-exec 2>&1) || fail "man -M $prefix/share/man hlaunch-exec: $page"
grep -q -- '--sandbox' <<<"$page" || fail "hlaunch-exec(1) does not describe --sandbox"
grep -q 'EXAMPLE' <<<"$page" || fail "hlaunch-exec(1) has no examples"
man -M "$prefix/share/man" hlaunch-sidecar 2>&1 | grep -q -- '--socket-group' || fail "hlaunch-sidecar(1) does not describe --socket-group"
v=$("$prefix/bin/hlaunch" --version) || fail "hlaunch --version"
sv=$("$prefix/bin/hlaunch-sidecar" --version) || fail "hlaunch-sidecar --version"
[ "${v#hlaunch }" = "${sv#hlaunch-sidecar }" ] || fail "versions differ: $v / $sv"
"$prefix/bin/hlaunch" completion bash | cmp -s - "$prefix/share/bash-completion/completions/hlaunch" ||
	fail "the installed bash completion is not hlaunch completion bash's"
# The completion loads in bash and completes a command name.
out=$(bash --norc --noprofile -c "source '$prefix/share/bash-completion/completions/hlaunch' 2>/dev/null || true
	complete -p hlaunch") || fail "the bash completion does not register: $out"
for f in lib/systemd/system/hlaunch-sidecar.service share/systemd/user/hlaunch-sidecar.service; do
	grep -q "ExecStart=$prefix/bin/hlaunch " "$prefix/$f" || fail "$f does not run $prefix/bin/hlaunch"
done
grep -q "^Documentation=.*file://$prefix/share/doc/hlaunch/sidecar.md" "$prefix/lib/systemd/system/hlaunch-sidecar.service" ||
	fail "the system unit's Documentation= is not the installed sidecar.md"
[ -f "$prefix/share/doc/hlaunch/sidecar.md" ] || fail "share/doc/hlaunch/sidecar.md not installed"

make -s uninstall PREFIX="$prefix" >/dev/null || fail "make uninstall PREFIX=$prefix"
left=$(find "$prefix" -mindepth 1)
[ -z "$left" ] || fail "make uninstall left: $left"
echo "install: ok"
