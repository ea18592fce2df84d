#!/usr/bin/env bash
# image.sh - the guest lane's Debian 12 image: systemd as PID 1, pure cgroup v2, dbus, a linger user
# (alice, uid 1001), a user without linger (bob, uid 1002), group hermes, and a baked unit (vmtest.service)
# that mounts the 9p share "share" and runs share/guest/run.sh. The tests live in the share, so changing
# them never rebuilds the image.
#
# Cached under $CACHE (default /var/cache/hlaunch-vm), outside any clone:
#   rootfs-<K1>/   the debootstrap tree; K1 hashes the suite and package list (the slow part, ~3-8 min)
#   image-<K2>/    vm.img (ext4, sparse), vmlinuz, initrd.img; K2 hashes K1 and this file
# A matching entry is reused; entries with other keys are removed when a new one is made. No loop device
# and no mount: debootstrap --include installs everything, and mkfs.ext4 -d builds the image from a
# directory. Prints the image directory on stdout's last line. Needs root, debootstrap, e2fsprogs.
set -euo pipefail
CACHE=${CACHE:-/var/cache/hlaunch-vm}
SUITE=bookworm
IMG_SIZE=4G
PKGS=systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,udev,python3,procps,util-linux,iproute2,kmod,linux-image-amd64,ifupdown,systemd-container,initramfs-tools,strace,psmisc

# The Debian mirror this machine's apt already uses (the first deb URI of its sources), unless MIRROR is set.
apt_mirror() {
	{ grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources || true
	  grep -hsE '^deb ' /etc/apt/sources.list || true; } | awk '{print $2; exit}'
}

k1=$(printf '%s\n' "$SUITE" "$PKGS" | sha256sum | cut -c1-16)
k2=$({ echo "$k1"; cat "$0"; } | sha256sum | cut -c1-16)
ROOTFS=$CACHE/rootfs-$k1
IMAGE=$CACHE/image-$k2
mkdir -p "$CACHE"
exec 9>"$CACHE/lock"
flock 9 # one builder at a time; a second lane waits and then reuses the entry

if [ -f "$IMAGE/ok" ]; then
	echo "guest image: cached $IMAGE" >&2
	echo "$IMAGE"
	exit 0
fi

if [ ! -f "$ROOTFS/.ok" ]; then
	MIRROR=${MIRROR:-$(apt_mirror)}
	[ -n "$MIRROR" ] || { echo "image.sh: no Debian mirror in the apt sources: set MIRROR" >&2; exit 1; }
	tmp=$CACHE/rootfs-$k1.tmp
	rm -rf "$tmp"
	echo "guest image: debootstrap $SUITE from $MIRROR (a few minutes)" >&2
	debootstrap --variant=minbase --include="$PKGS" "$SUITE" "$tmp" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
		{ tail -20 "$CACHE/debootstrap.log" >&2; rm -rf "$tmp"; exit 1; }
	chroot "$tmp" apt-get clean
	touch "$tmp/.ok"
	for old in "$CACHE"/rootfs-*; do [ "$old" = "$tmp" ] || rm -rf "$old"; done
	mv "$tmp" "$ROOTFS"
fi

# Configure a copy, so that the cached tree stays as debootstrap left it.
tmp=$CACHE/image-$k2.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
R=$tmp/rootfs
cp -a "$ROOTFS" "$R"
rm -f "$R/.ok"

echo hlvm >"$R/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 hlvm\n' >"$R/etc/hosts"
printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' >"$R/etc/fstab"
# A fixed machine id: the identity tests need it to persist across the guest's reboot.
echo 4d4c61756e636847756573744c616e65 >"$R/etc/machine-id"
chroot "$R" sh -c 'echo root:root | chpasswd'
# alice: the linger user (her manager runs from boot); bob: a user without a manager; hermes: the
# sidecar socket's group.
chroot "$R" sh -c 'groupadd hermes && useradd -m -s /bin/bash -u 1001 alice && useradd -m -s /bin/bash -u 1002 bob'
mkdir -p "$R/var/lib/systemd/linger"
touch "$R/var/lib/systemd/linger/alice"
# Root autologin on the serial console, for debugging by hand.
mkdir -p "$R/etc/systemd/system/serial-getty@ttyS0.service.d"
cat >"$R/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf" <<'U'
[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin root --keep-baud 115200,57600,38400,9600 %I $TERM
U
printf '9p\n9pnet_virtio\n' >"$R/etc/modules-load.d/9p.conf"

cat >"$R/usr/local/sbin/vmtest-boot" <<'U'
#!/bin/sh
modprobe 9pnet_virtio 2>/dev/null; modprobe 9p 2>/dev/null
mkdir -p /mnt/share
if ! mountpoint -q /mnt/share; then
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share /mnt/share || { echo "VMTEST: cannot mount share"; systemctl poweroff; exit 1; }
fi
[ -x /mnt/share/guest/run.sh ] || { echo "VMTEST: no share/guest/run.sh"; systemctl poweroff; exit 0; }
exec /bin/bash /mnt/share/guest/run.sh
U
chmod 755 "$R/usr/local/sbin/vmtest-boot"
cat >"$R/etc/systemd/system/vmtest.service" <<'U'
[Unit]
Description=hlaunch guest lane driver (runs share/guest/run.sh)
After=systemd-logind.service dbus.service systemd-user-sessions.service local-fs.target user@1001.service
Wants=systemd-logind.service dbus.service
[Service]
Type=simple
ExecStart=/usr/local/sbin/vmtest-boot
StandardOutput=journal+console
StandardError=journal+console
TimeoutStopSec=15
[Install]
WantedBy=multi-user.target
U
ln -sf /etc/systemd/system/vmtest.service "$R/etc/systemd/system/multi-user.target.wants/vmtest.service"
for u in systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer; do
	ln -sf /dev/null "$R/etc/systemd/system/$u"
done

K=$(ls "$R"/boot/vmlinuz-* | sort -V | tail -1)
I=$(ls "$R"/boot/initrd.img-* | sort -V | tail -1)
cp "$K" "$tmp/vmlinuz"
cp "$I" "$tmp/initrd.img"
mkfs.ext4 -q -L hlvm -d "$R" "$tmp/vm.img" "$IMG_SIZE"
rm -rf "$R"
touch "$tmp/ok"
for old in "$CACHE"/image-*; do [ "$old" = "$tmp" ] || rm -rf "$old"; done
mv "$tmp" "$IMAGE"
echo "guest image: built $IMAGE (kernel $(basename "$K"))" >&2
echo "$IMAGE"
