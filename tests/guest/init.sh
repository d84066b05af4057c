#!/bin/busybox sh
# /init of the guest initramfs (tests/guest/guest.py builds it): mounts the kernel file
# systems, loads the requested modules, runs /guest/script.sh as root and powers off.
# Results leave as marker lines on the serial console, files on a virtio serial port (lib.sh).
/bin/busybox --install -s /bin
export PATH=/usr/bin:/usr/sbin:/bin:/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /dev/shm
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
ifconfig lo 127.0.0.1 up 2>/dev/null
hostname rtscope-guest
. /guest/lib.sh
. /guest/env.sh
mark booted "$(uname -r)"
while read -r m; do
    [ -n "$m" ] || continue
    insmod "/lib/modules/$(uname -r)/$m"
    mark module "$m $?"
done < /guest/modules
# The files put_file sends leave on this virtio serial port (lib.sh), if the guest has it.
FILES_PORT=$(files_port)
export FILES_PORT
mark files-port "${FILES_PORT:-none: files go over the console}"
cd /root
_script_t0=$(uptime_s)
mark script-start "$_script_t0"
# A subshell: an `exit` in the script ends the script, not init.
(. /guest/script.sh)
_script_rc=$?
took script "$_script_t0"
mark script-exit "$_script_rc"
mark done
sync
poweroff -f
# Not reached; if poweroff fails the outer timeout ends QEMU.
sleep 3600
