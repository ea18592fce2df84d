#!/bin/bash
# run.sh - runs inside the guest as root, from vmtest.service, out of the 9p share at /mnt/share.
# Phase 1 (first boot) runs the sections in $SECTIONS1 and reboots; phase 2 (marker
# /var/lib/vmtest/phase2) runs $SECTIONS2 and powers off. A section is a function sec_<name> of
# sections.sh; its output goes to out/<name>.log, its go test -json logs to out/*.json.
S=/mnt/share
OUT=$S/out
. "$S/guest/config"
. "$S/guest/sections.sh"
mkdir -p /var/lib/vmtest
if [ -f /var/lib/vmtest/phase2 ]; then PHASE=2; LIST=$SECTIONS2; else PHASE=1; LIST=$SECTIONS1; fi
progress() { echo "VMTEST: $*" | tee -a "$OUT/progress.log"; }
progress "phase $PHASE boot_id=$(cat /proc/sys/kernel/random/boot_id) sections: $LIST"
if [ $PHASE = 1 ]; then
	install -m 755 "$S/bin/hlaunch" "$S/bin/hlaunch-sidecar" /usr/local/bin/
	# The tests and the source tree (testdata, the Python client) on the guest's own disk: readable by
	# every user, and not slowed by 9p.
	rm -rf "$VT"; mkdir -p "$VT"
	cp -r "$S/tests" "$S/src" "$VT/"
	cp "$S/bin/test2json" "$VT/"
	chmod -R a+rX "$VT"
fi
{ uname -a; head -2 /etc/os-release; systemctl --version | head -1; stat -fc %T /sys/fs/cgroup
  cat /sys/fs/cgroup/cgroup.subtree_control; systemd-analyze 2>&1 | head -1; loginctl list-users; } >"$OUT/host-phase$PHASE.log" 2>&1
for s in $LIST; do
	progress "section $s start $(date -u +%T)"
	( "sec_${s//-/_}" ) >"$OUT/$s.log" 2>&1
	progress "section $s done rc=$? $(date -u +%T)"
	sync
done
journalctl -b --no-pager >"$OUT/journal-phase$PHASE.log" 2>&1
sync
if [ $PHASE = 1 ] && [ "$PHASES" = 2 ]; then
	touch /var/lib/vmtest/phase2; sync
	progress "rebooting"
	# The lane's qemu runs with -no-reboot: this ends it, and the lane boots the disk again.
	echo phase1 >"$OUT/rebooting"; sync
	systemctl reboot
else
	progress "poweroff"
	echo done >"$OUT/finished"; sync
	systemctl poweroff
fi
