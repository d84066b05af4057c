# The rtscope guest checks, run as root inside the guest (busybox sh; lib.sh is sourced).
# Function, not latency: emulated latencies mean nothing. The host (checks.py) reads the
# markers and the database this script sends back.
#
# Environment (guest.py --env): CAMPAIGN=1 runs the 20 s quick campaign with built-in loads.
export RTSCOPE_DB=/tmp/guest.db
mark uname "$(uname -a)"
mark realtime "$(cat /sys/kernel/realtime 2>/dev/null || echo absent)"
mark version "$(rtscope --version)"
mark irq-threads "$(ps -o comm | grep -c '^irq/')"
mark tracers "$(cat /sys/kernel/tracing/available_tracers 2>/dev/null)"

# The preflight audit first, on the untouched system (issue 13): verdicts with fixes, exit 0/1,
# and preempt_rt ok exactly on the RT kernel (KIND comes from the host: rt or stock).
check audit sh /guest/check-in-guest.sh rtscope "${KIND:-}"

# 2 s on every CPU, SCHED_FIFO 80 (the default policy is fifo).
check measure rtscope measure -D 2s --policy fifo -p 80 -q --label guest-measure
mark measure-policy "$(grep -c 'SCHED_FIFO' /tmp/measure.log)"

if [ "${CAMPAIGN:-0}" = 1 ]; then
    # The quick preset (idle, then messaging+memory+CPU built-in loads), 10 s per run, with
    # interrupt traffic from the scratch disk (lib.sh irq_start) so IRQ threads have work.
    irq_start
    check campaign rtscope run --preset quick --duration 10s --tag guest=1
    irq_stop
    mark irq-threads-after "$(ps -o comm | grep '^irq/' | tr '\n' ' ')"
fi

check runs rtscope runs
check report rtscope report -o /tmp/report
mark report-files "$(ls /tmp/report | tr '\n' ' ')"
put_file guest.db /tmp/guest.db
for l in audit measure campaign report; do
    [ -f "/tmp/$l.log" ] && put_log "$l"
done
