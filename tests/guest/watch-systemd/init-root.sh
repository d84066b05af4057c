#!/bin/busybox sh
# /init of the initramfs for the systemd guest (watch-systemd/run.py, via guest.py's
# build_initramfs): Debian's kernel has virtio and ext4 as modules, so this loads them, sets the
# NIC up for QEMU's user network (static: the root file system has no network manager), mounts
# the ext4 disk /dev/vda and hands over to its systemd as PID 1.
/bin/busybox --install -s /bin
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
. /guest/lib.sh
while read -r m; do
    [ -n "$m" ] || continue
    insmod "/lib/modules/$(uname -r)/$m" || mark module-failed "$m"
done < /guest/modules
# QEMU's user network: the guest is 10.0.2.15, the host 10.0.2.2 (hostfwd reaches the guest).
ifconfig eth0 10.0.2.15 netmask 255.255.255.0 up || mark init-error "no eth0"
route add default gw 10.0.2.2 2>/dev/null
mkdir -p /newroot
n=0
while [ ! -b /dev/vda ] && [ $n -lt 100 ]; do usleep 100000; n=$((n + 1)); done
if ! mount -t ext4 -o rw /dev/vda /newroot; then
    mark init-error "cannot mount /dev/vda"
    dmesg | tail -n 20 | sed 's/^/| /'
    poweroff -f
fi
mark initramfs-done "$(cut -d' ' -f1 /proc/uptime)"
umount /dev /sys /proc
exec switch_root /newroot /lib/systemd/systemd
