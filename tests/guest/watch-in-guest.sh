# rtscope watch in the guest (issue 30), sourced by rtscope-checks.sh (busybox sh, lib.sh).
# The guest's init is this shell, not systemd: the watch runs with the unit's own ExecStart line
# (packaging/rtscope-watch.service) and a /etc/rtscope/watch.toml written as a user would, as
# root. Phase 1: CPU 1 in 2 s windows at 1 ms, /metrics on loopback fetched with wget, with
# EXPLAIN=1 the injected culprit on CPU 1 and `explain = true`; then SIGKILL right after a
# window was written (what a crash or systemd's kill leaves). Phase 2: the same series
# restarted at the default 5 ms on every CPU, its threads' CPU time over 20 s, then SIGTERM.
# The database goes back to the host (watch_checks.py).
W=/var/lib/rtscope/watch.db
mkdir -p /var/lib/rtscope /etc/rtscope
exec_start=$(sed -n 's/^ExecStart=//p' /guest/rtscope-watch.service)
mark watch-exec "$exec_start"

# watch_windows: the stored windows of the series (0 before the first).
watch_windows() {
    rtscope runs --db "$W" 2>/dev/null | awk '$2 == "guest" {
        for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+\/[0-9]+$/) { split($i, n, "/"); s = n[1] + n[2] + n[3] }
    } END { print s + 0 }'
}

# watch_until N SECONDS: waits until N windows are stored; returns 1 on timeout, 2 when the
# watch ($wpid) ended.
watch_until() {
    _n=0
    while [ "$(watch_windows)" -lt "$1" ]; do
        kill -0 "$wpid" 2>/dev/null || return 2
        _n=$((_n + 1))
        [ "$_n" -gt $(($2 * 5)) ] && return 1
        usleep 200000
    done
}

# thread_ticks PID: "measuring control" CPU ticks (utime+stime) of the watch's threads.
thread_ticks() {
    _m=0
    _c=0
    for _t in /proc/"$1"/task/*; do
        _v=$(cut -d' ' -f14,15 "$_t/stat" 2>/dev/null | awk '{ print $1 + $2 }')
        case "$(cat "$_t/comm" 2>/dev/null)" in
            rtscope-m*) _m=$((_m + ${_v:-0})) ;;
            *) _c=$((_c + ${_v:-0})) ;;
        esac
    done
    echo "$_m $_c"
}

explain_line=""
[ "${EXPLAIN:-0}" = 1 ] && explain_line='explain = true'
cat >/etc/rtscope/watch.toml <<EOF
series = "guest"
cpus = "1"
interval = "1ms"
window = "2s"
spike = "1500us"
listen = "127.0.0.1:9464"
$explain_line
EOF
if [ "${EXPLAIN:-0}" = 1 ]; then
    # Until killed below: on a loaded host the emulated guest may take minutes to explain
    # its windows (the rt-arm64 guest once outlived a 40 s culprit, leaving idle to explain).
    /root/culprit 1 20 100 900 &
    wcul=$!
fi
$exec_start >/tmp/watch.log 2>&1 &
wpid=$!
watch_until 3 120
mark watch-phase1 "$? $(watch_windows)"
wget -q -O /tmp/watch-metrics.prom http://127.0.0.1:9464/metrics
mark watch-metrics "$? $(grep -c '^rtscope_watch' /tmp/watch-metrics.prom 2>/dev/null)"
put_file watch-metrics.prom /tmp/watch-metrics.prom
# Explanations come after their window: give them two windows more.
watch_until 5 120
before=$(watch_windows)
watch_until $((before + 1)) 60
kill -9 "$wpid"
mark watch-killed "$(date +%s) $(watch_windows)"
wait "$wpid" 2>/dev/null
[ -n "${wcul:-}" ] && kill "$wcul" 2>/dev/null
# The reaper removes the tracefs instance of a killed watch (--explain).
n=0
while [ "$(ls /sys/kernel/tracing/instances 2>/dev/null | wc -l)" != 0 ] && [ $n -lt 50 ]; do usleep 100000; n=$((n + 1)); done
mark watch-kill-instances "$(ls /sys/kernel/tracing/instances 2>/dev/null | wc -l)"

cat >/etc/rtscope/watch.toml <<EOF
series = "guest"
window = "2s"
EOF
$exec_start >/tmp/watch2.log 2>&1 &
wpid=$!
after=$(watch_windows)
watch_until $((after + 2)) 120
mark watch-phase2 "$? $(watch_windows)"
t0=$(thread_ticks "$wpid")
sleep 20
t1=$(thread_ticks "$wpid")
mark watch-cpu "$t0 $t1 20 $(grep -c ^processor /proc/cpuinfo)"
mark watch-rss "$(awk '/VmRSS/ { print $2 }' /proc/$wpid/status)"
kill -TERM "$wpid"
wait "$wpid"
mark watch-stop "$?"
put_file watch.db "$W"
put_log watch
put_log watch2
