#!/usr/bin/env bash
# make install / make uninstall. Installs, under $DESTDIR$PREFIX:
#   bin/hlaunch, bin/hlaunch-sidecar                     (from bin/, built by make build)
#   share/man/man1/hlaunch*.1                            (from bin/man, built by make man)
#   share/bash-completion/completions/hlaunch, share/zsh/site-functions/_hlaunch,
#   share/fish/vendor_completions.d/hlaunch.fish         (hlaunch completion bash|zsh|fish)
#   lib/systemd/system/hlaunch-sidecar.{service,socket}  (contrib/systemd/system, paths set to $PREFIX)
#   share/systemd/user/hlaunch-sidecar.{service,socket}  (contrib/systemd/user, paths set to $PREFIX; in the
#                                                         user manager's search path for /usr/local and ~/.local)
#   share/doc/hlaunch/                                   (README.md, docs/*.md, docs/adr, docs/schema)
# uninstall removes exactly those files, then every directory this layout names that is left empty, so
# that an install into an empty prefix followed by an uninstall leaves it empty.
set -euo pipefail
cd "$(dirname "$0")/.."

action=${1:?usage: install.sh install|uninstall}
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
case $PREFIX in /*) ;; *) echo "install: PREFIX=$PREFIX: want an absolute path" >&2; exit 2 ;; esac
root=$DESTDIR$PREFIX
bindir=$PREFIX/bin
docdir=$PREFIX/share/doc/hlaunch

# Directories of the layout, deepest first (uninstall removes those left empty, in this order).
dirs=(
	share/doc/hlaunch/adr share/doc/hlaunch/schema share/doc/hlaunch share/doc
	share/man/man1 share/man
	share/bash-completion/completions share/bash-completion
	share/zsh/site-functions share/zsh
	share/fish/vendor_completions.d share/fish
	share/systemd/user share/systemd
	share
	lib/systemd/system lib/systemd lib
	bin
)

# unit SRC DST: a unit with the install's paths in place of the ones contrib/ is written for.
unit() {
	install -d -m 0755 "$(dirname "$2")"
	sed -e "s|/usr/local/bin/|$bindir/|g" -e "s|%h/.local/bin/|$bindir/|g" \
		-e "s|/usr/local/share/doc/hlaunch|$docdir|g" "$1" >"$2"
	chmod 0644 "$2"
}

do_install() {
	[ -x bin/hlaunch ] && [ -x bin/hlaunch-sidecar ] || { echo "install: run make build first" >&2; exit 1; }
	[ -f bin/man/hlaunch-exec.1 ] || { echo "install: run make man first" >&2; exit 1; }
	install -D -m 0755 bin/hlaunch "$root/bin/hlaunch"
	install -D -m 0755 bin/hlaunch-sidecar "$root/bin/hlaunch-sidecar"
	install -d -m 0755 "$root/share/man/man1"
	install -m 0644 bin/man/*.1 "$root/share/man/man1/"
	install -d -m 0755 "$root/share/bash-completion/completions" "$root/share/zsh/site-functions" \
		"$root/share/fish/vendor_completions.d"
	bin/hlaunch completion bash >"$root/share/bash-completion/completions/hlaunch"
	bin/hlaunch completion zsh >"$root/share/zsh/site-functions/_hlaunch"
	bin/hlaunch completion fish >"$root/share/fish/vendor_completions.d/hlaunch.fish"
	for f in contrib/systemd/system/*; do unit "$f" "$root/lib/systemd/system/$(basename "$f")"; done
	for f in contrib/systemd/user/*; do unit "$f" "$root/share/systemd/user/$(basename "$f")"; done
	install -d -m 0755 "$root/share/doc/hlaunch/adr" "$root/share/doc/hlaunch/schema"
	install -m 0644 README.md docs/*.md "$root/share/doc/hlaunch/"
	install -m 0644 docs/adr/*.md "$root/share/doc/hlaunch/adr/"
	install -m 0644 docs/schema/*.json "$root/share/doc/hlaunch/schema/"
}

do_uninstall() {
	rm -f "$root/bin/hlaunch" "$root/bin/hlaunch-sidecar"
	rm -f "$root"/share/man/man1/hlaunch.1 "$root"/share/man/man1/hlaunch-*.1
	rm -f "$root/share/bash-completion/completions/hlaunch" "$root/share/zsh/site-functions/_hlaunch" \
		"$root/share/fish/vendor_completions.d/hlaunch.fish"
	for f in contrib/systemd/system/*; do rm -f "$root/lib/systemd/system/$(basename "$f")"; done
	for f in contrib/systemd/user/*; do rm -f "$root/share/systemd/user/$(basename "$f")"; done
	rm -rf "$root/share/doc/hlaunch"
	for d in "${dirs[@]}"; do
		[ -d "$root/$d" ] && rmdir --ignore-fail-on-non-empty "$root/$d"
	done
	return 0
}

case $action in
install) do_install ;;
uninstall) do_uninstall ;;
*) echo "install.sh: unknown action $action: want install or uninstall" >&2; exit 2 ;;
esac
