#!/bin/bash
# The guest half of watch-systemd/run.py: started by systemd (rtscope-guest-test.service) in
# the Debian 12 guest, it drives rtscope-watch.service with systemctl and reports on the serial
# console in marker lines (@@RTSCOPE-GUEST KEY VALUE; guest.py parses them). Which boot this is
# comes from the kernel command line (rtscope.phase=1 or 2), never from the disk.
#  Boot 1: the unit as shipped (disabled), `systemctl enable` + sync before the watch writes
#          anything, `systemctl start`, two windows, `kill -9` of its main PID, systemd's
#          restart, windows again, then the marker at which the host cuts the power (kills
#          QEMU) a few seconds after a window was written.
#  Boot 2: systemd starts the enabled watch at boot; two windows; `systemctl stop`; poweroff.
# The windows are followed on the watch's own /metrics (bash's /dev/tcp, no HTTP client in the
# image): reading the database here as root could leave root-owned -wal/-shm files behind.
exec >/dev/ttyS0 2>&1
mark() { echo "@@RTSCOPE-GUEST $*"; }
now_ns() { date +%s%N; }
unit=rtscope-watch
phase=$(sed -n 's/.*rtscope\.phase=\([0-9]\).*/\1/p' /proc/cmdline)
mark phase "$phase"

# The /metrics page, or nothing (10 s at most).
metrics() {
    timeout 10 bash -c 'exec 3<>/dev/tcp/127.0.0.1/9464 &&
        printf "GET /metrics HTTP/1.0\r\nHost: guest\r\n\r\n" >&3 && cat <&3' 2>/dev/null
}
# The end of the last window the watch reports (Unix seconds; 0 before the first).
last_end() {
    metrics | awk '/^rtscope_watch_window_end_timestamp_seconds/ { if ($2 + 0 > m) m = $2 + 0 }
                   END { printf "%d\n", m }'
}
# wait_end_after T SECONDS: waits until the last window ends after T; prints that end.
wait_end_after() {
    local deadline=$((SECONDS + $2)) e=0
    while [ $SECONDS -lt $deadline ]; do
        e=$(last_end)
        if [ "${e:-0}" -gt "$1" ]; then echo "$e"; return 0; fi
        sleep 0.5
    done
    echo "${e:-0}"
    return 1
}
main_pid() { systemctl show -p MainPID --value "$unit"; }
journal() { journalctl -u "$unit" --no-pager -o short-monotonic 2>&1 | tail -n 30 | sed 's/^/| /'; }
watch_status() {
    local pid
    pid=$(main_pid)
    mark "$1-active" "$(systemctl is-active "$unit")"
    mark "$1-pid" "$pid"
    mark "$1-ids" "$(awk '/^Uid:/ { print $2 } ' "/proc/$pid/status" 2>/dev/null) $(awk '/^CapEff:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)"
}

state=$(systemctl is-system-running --wait 2>&1)
mark system "$state"
mark boot-time "$(systemd-analyze time 2>&1 | head -n 1)"
mark pid1 "$(cat /proc/1/comm)"
[ "$state" = running ] || systemctl --failed --no-pager --plain | sed 's/^/| /'

if [ "$phase" = 1 ]; then
    mark shipped "$(systemctl is-enabled "$unit" 2>&1)"
    # Enabled for the next boot, and on disk, before the watch has written anything: the sync
    # must not flush the watch's database ahead of the power cut.
    systemctl enable "$unit" 2>/dev/null
    sync
    systemctl start "$unit"
    mark start "$?"
    watch_status p1
    e1=$(wait_end_after 0 180); mark p1-window "$? $e1"
    e2=$(wait_end_after "$e1" 60); mark p1-window "$? $e2"
    sleep 3
    pid=$(main_pid)
    k=$(now_ns)
    kill -9 "$pid"
    mark killed "$k $pid"
    n=0
    while { [ "$(main_pid)" = "$pid" ] || [ "$(main_pid)" = 0 ]; } && [ $n -lt 120 ]; do
        sleep 0.5; n=$((n + 1))
    done
    mark restarted "$(now_ns) $(systemctl show -p NRestarts --value "$unit") $(main_pid)"
    watch_status p1r
    e3=$(wait_end_after $((k / 1000000000)) 120); mark p1r-window "$? $e3"
    e4=$(wait_end_after "$e3" 60); mark p1r-window "$? $e4"
    sleep 3
    journal
    # The host kills QEMU when this line arrives: a power cut, 3 s after a window was written.
    mark poweroff-now "$(now_ns)"
    sleep 600
else
    n=0
    while [ "$(systemctl is-active "$unit")" != active ] && [ $n -lt 240 ]; do
        sleep 0.5; n=$((n + 1))
    done
    mark p2-enabled "$(systemctl is-enabled "$unit" 2>&1)"
    watch_status p2
    mark p2-since "$(now_ns)"
    e5=$(wait_end_after "$(date +%s)" 180); mark p2-window "$? $e5"
    e6=$(wait_end_after "$e5" 60); mark p2-window "$? $e6"
    systemctl stop "$unit"
    mark stop "$? $(systemctl show -p ExecMainStatus --value "$unit") $(systemctl show -p Result --value "$unit")"
    journal
    mark done
    # No D-Bus in the image: no logind to ask about inhibitors, no wall message.
    systemctl poweroff --no-wall --check-inhibitors=no
fi
