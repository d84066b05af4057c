# Helpers for guest scripts (sourced by /init before the script runs; busybox sh).

# mark KEY VALUE...: one marker line on the console, read by guest.py.
mark() {
    echo "@@RTSCOPE-GUEST $*"
}

# uptime_s: the guest's seconds since boot (/proc/uptime), for the `took` markers.
uptime_s() {
    cut -d' ' -f1 /proc/uptime
}

# took NAME T0: marks `took NAME SECONDS`, the guest time since T0 (uptime_s), so the host can
# say where a boot's time went (checks.py: the slowest steps of each kernel).
took() {
    mark took "$1 $(awk -v a="$2" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }')"
}

# check NAME CMD...: runs CMD with its output in /tmp/NAME.log, marks `check NAME RC`; on
# failure prints the log's last 40 lines (prefixed with "| ") to the console. Returns RC.
check() {
    _name=$1
    _ck_t0=$(uptime_s)
    shift
    "$@" >"/tmp/$_name.log" 2>&1
    _rc=$?
    mark check "$_name $_rc"
    took "$_name" "$_ck_t0"
    if [ "$_rc" -ne 0 ]; then
        echo "| $*"
        tail -n 40 "/tmp/$_name.log" | sed 's/^/| /'
    fi
    return "$_rc"
}

# dump_tasks: every thread's name, pid/tid, state, wait channel and CPU time (utime+stime in
# ticks, read twice 1 s apart: a spinning thread's grows) on the console ("| task ..."), then
# each rtscope thread's kernel stack, the memory and load figures, and the kernel log's tail
# (dmesg shows what loglevel=3 hid from the console: an OOM kill, a stall report) after asking
# the kernel for every CPU's backtrace (sysrq l): what a hung check was waiting for or doing.
dump_tasks() {
    for _d in /proc/[0-9]*/task/[0-9]*; do
        echo "$_d $(cut -d' ' -f14,15 "$_d/stat" 2>/dev/null)"
    done >/tmp/cpu-before
    sleep 1
    for _d in /proc/[0-9]*/task/[0-9]*; do
        _t=${_d#/proc/}
        _s=$(cut -d' ' -f3,14,15,18,41 "$_d/stat" 2>/dev/null)
        _b=$(grep "^$_d " /tmp/cpu-before | cut -d' ' -f2,3)
        echo "| task $(cat "$_d/comm" 2>/dev/null) pid/tid=${_t%%/*}/${_d##*/} state=${_s%% *} wchan=$(cat "$_d/wchan" 2>/dev/null) utime,stime,prio,policy=$(echo "${_s#* }" | tr ' ' ,) 1s-before=$(echo "$_b" | tr ' ' ,)"
    done
    for _p in $(pidof rtscope); do
        for _d in /proc/"$_p"/task/[0-9]*; do
            echo "| stack $_p/${_d##*/}"
            sed 's/^/|   /' "$_d/stack" 2>/dev/null
        done
        grep -E 'VmRSS|VmLck|Threads' /proc/"$_p"/status | sed 's/^/| status /'
    done
    echo "| loadavg $(cat /proc/loadavg)"
    grep -E 'MemTotal|MemFree|MemAvailable|Mlocked|Shmem:' /proc/meminfo | sed 's/^/| meminfo /'
    echo l >/proc/sysrq-trigger 2>/dev/null
    sleep 1
    dmesg 2>/dev/null | tail -n 150 | sed 's/^/| dmesg /'
}

# check_within SECS NAME CMD...: `check`, with a watchdog. If CMD (an rtscope command) still
# runs after SECS seconds, the console gets a `hung NAME` marker and dump_tasks, and rtscope is
# killed, so the check fails with its cause in view and the boot still ends within the host's
# outer timeout (a campaign in the RT guest once sat silent until that 1,200 s timeout).
check_within() {
    _secs=$1
    shift
    (sleep "$_secs" && mark hung "$1" && dump_tasks && killall -KILL rtscope) &
    _dog=$!
    check "$@"
    _crc=$?
    kill "$_dog" 2>/dev/null
    return "$_crc"
}

# files_port: the device of the virtio serial port named rtscope.files (guest.py's port for
# files), or nothing without one (its module missing).
files_port() {
    for _fp in /sys/class/virtio-ports/*/name; do
        [ "$(cat "$_fp" 2>/dev/null)" = rtscope.files ] || continue
        _fp=${_fp%/name}
        [ -c "/dev/${_fp##*/}" ] && echo "/dev/${_fp##*/}"
        return
    done
}

# put_file NAME PATH: sends a file to the host; guest.py returns it as BootResult.files[NAME]
# (`guest.py boot --save-dir DIR` writes it to DIR/NAME). On the files' port (FILES_PORT, set
# by init.sh): `FILE NAME SIZE` and the bytes of a copy taken first, so that the size sent is
# the size of what follows even if the file changes meanwhile; `file-sent` on the console.
# Without the port: gzip and base64 between markers on the console.
put_file() {
    _pf_t0=$(uptime_s)
    if [ -n "${FILES_PORT:-}" ]; then
        if cp "$2" /tmp/.put_file 2>/dev/null; then
            _pf_size=$(wc -c </tmp/.put_file)
            { echo "FILE $1 $_pf_size"; cat /tmp/.put_file; } >"$FILES_PORT"
            mark file-sent "$1 $_pf_size"
        else
            mark file-error "$1: $2 cannot be read"
        fi
        rm -f /tmp/.put_file
    else
        mark file-begin "$1 $(wc -c <"$2")"
        gzip -c "$2" | base64
        mark file-end "$1"
    fi
    took "put $1" "$_pf_t0"
}

# put_log NAME: sends /tmp/NAME.log (from check) to the host.
put_log() {
    put_file "$1.log" "/tmp/$1.log"
}

# irq_start / irq_stop: interrupt traffic, as a board's SD card, eMMC, USB or Ethernet
# controller makes under load. The QEMU guest has no device busy by itself, so this reads the
# scratch disk (/dev/vda: guest.py --scratch-disk) with 512-byte direct I/O in a loop: every
# completed request is a virtio interrupt, handled on PREEMPT_RT by its threaded handler
# (irq/N-virtio0-req.0). The reader runs at nice -20 so the interrupt rate does not collapse
# when a CPU load competes with it, as an external device's would not (busybox has no chrt).
# No-op without the disk.
irq_start() {
    [ -b /dev/vda ] || return 0
    # shellcheck disable=SC2016
    sh -c 'renice -n -20 -p $$ >/dev/null 2>&1
        while :; do dd if=/dev/vda of=/dev/null bs=512 iflag=direct 2>/dev/null; done' &
    IRQ_LOAD_PID=$!
    mark irq-load "/dev/vda $IRQ_LOAD_PID"
}
irq_stop() {
    [ -n "${IRQ_LOAD_PID:-}" ] || return 0
    kill "$IRQ_LOAD_PID" 2>/dev/null
    killall dd 2>/dev/null # inside the guest: only the reader runs dd
    IRQ_LOAD_PID=
}

# reference_start / reference_stop NAME: the independent reference of the --explain checks
# (reference.py on the host). A tracefs instance of the script's own, `instances/reference`,
# records CPU 1: sched_switch, the IRQ, x86 vector and softirq entries and exits, the IPI
# function calls and tasklets by function (where the kernel has the events), on CLOCK_MONOTONIC
# (trace_clock mono), the clock of rtscope's spike times. reference_stop sends its text trace
# as NAME and removes the instance.
reference_start() {
    _r=/sys/kernel/tracing/instances/reference
    mkdir $_r
    echo 0 > $_r/tracing_on
    echo mono > $_r/trace_clock
    echo 2 > $_r/tracing_cpumask
    echo 8192 > $_r/buffer_size_kb
    # CPU 1's ring larger: rtscope noise under network load on rt-arm64 wrote 389,417 events
    # in its 3 s, and 8 MB held the last 202,187 (the older ones overwritten, uncovered).
    echo 32768 > $_r/per_cpu/cpu1/buffer_size_kb || mark reference-enable-failed buffer
    for _e in sched/sched_switch sched/sched_waking irq/irq_handler_entry irq/irq_handler_exit \
        irq/softirq_entry irq/softirq_exit; do
        echo 1 > $_r/events/$_e/enable || mark reference-enable-failed $_e
    done
    # x86: the vector interrupts (local timer, IPIs, irq_work) have no irq_handler events.
    [ -d $_r/events/irq_vectors ] && echo 1 > $_r/events/irq_vectors/enable
    # The handlers' functions, where the kernel names them (not 6.1's IPI function calls):
    # the truth of the handler checks (noisy_checks.handler_check).
    for _e in csd/csd_function_entry csd/csd_function_exit irq/tasklet_entry irq/tasklet_exit; do
        [ -d $_r/events/$_e ] && echo 1 > $_r/events/$_e/enable
    done
    # Where a measuring thread blocks (leaves the CPU in D): its kernel stack, for the host.
    echo "$REFERENCE_BLOCKED" > $_r/events/sched/sched_switch/trigger \
        || mark reference-enable-failed stacktrace
    echo 1 > $_r/tracing_on
}
REFERENCE_BLOCKED='stacktrace if prev_comm ~ "rtscope-m*" && prev_state & 2'
reference_stop() {
    _r=/sys/kernel/tracing/instances/reference
    echo 0 > $_r/tracing_on
    cat $_r/trace > /tmp/reference.txt
    mark reference-lines "$1 $(wc -l < /tmp/reference.txt)"
    put_file "$1" /tmp/reference.txt
    rm /tmp/reference.txt
    echo "!$REFERENCE_BLOCKED" > $_r/events/sched/sched_switch/trigger
    rmdir $_r
}
