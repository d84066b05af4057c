# Guest side of tests/guest/rtla-capture/run.py (busybox sh, sourced after lib.sh): runs the
# real `rtla osnoise top` and `rtla osnoise hist` of Debian 12 against the booted kernel's
# osnoise tracer and sends each output back (stdout and stderr apart, with its exit code), for
# the fixtures of `rtscope import` (crates/rtscope/tests/fixtures/import/rtla/).
# The culprit (tests/guest/culprit.c: SCHED_FIFO 99 on CPU 1, busy 20 ms every 100 ms) gives
# the runs marked "culprit" noise of a known kind and size.
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu
T=/sys/kernel/tracing
mark kernel "$(uname -r) $(uname -v)"
mark rtla-usage "$(rtla osnoise top -h 2>&1 | head -n 1)"
mark tracing_thresh "$(cat $T/tracing_thresh)"
mark osnoise-defaults "runtime_us=$(cat $T/osnoise/runtime_us) period_us=$(cat $T/osnoise/period_us) stop_tracing_us=$(cat $T/osnoise/stop_tracing_us)"

# cap NAME [culprit] -- CMD...: runs CMD (with the culprit on CPU 1 when asked), sends
# NAME.txt (stdout) and NAME.err (stderr), marks `rc NAME RC` and the command line.
cap() {
    _n=$1
    shift
    _c=
    if [ "$1" = culprit ]; then
        _c=1
        shift
    fi
    [ "$1" = -- ] && shift
    mark cmd "$_n $*"
    if [ -n "$_c" ]; then
        /root/culprit 1 20 100 40 &
        _cp=$!
        sleep 1
    fi
    "$@" >"/tmp/$_n.txt" 2>"/tmp/$_n.err"
    mark rc "$_n $?"
    if [ -n "$_c" ]; then
        kill "$_cp" 2>/dev/null
        wait "$_cp" 2>/dev/null
    fi
    put_file "$_n.txt" "/tmp/$_n.txt"
    put_file "$_n.err" "/tmp/$_n.err"
}

cap top-q -- rtla osnoise top -q -d 10s
cap top-live -- rtla osnoise top -d 4s
cap top-c1-T5-culprit culprit -- rtla osnoise top -c 1 -d 10s -T 5 -q
cap top-rp-P-culprit culprit -- rtla osnoise top -q -d 6s -r 900000 -p 1000000 -P f:10
cap top-stop-culprit culprit -- rtla osnoise top -q -c 1 -s 1000 -d 10s
cap hist -- rtla osnoise hist -d 10s
cap hist-c1-b10-E50-culprit culprit -- rtla osnoise hist -c 1 -d 10s -T 5 -b 10 -E 50
cap hist-no-header-culprit culprit -- rtla osnoise hist -d 4s -T 5 --no-header
cap hist-no-summary-culprit culprit -- rtla osnoise hist -d 4s -T 5 --no-summary
cap hist-no-index-culprit culprit -- rtla osnoise hist -d 4s -T 5 --no-index
cap hist-with-zeros-E20-culprit culprit -- rtla osnoise hist -c 1 -d 4s -T 5 --with-zeros -E 20
cap hist-stop-culprit culprit -- rtla osnoise hist -c 1 -s 1000 -d 10s
mark osnoise-after "runtime_us=$(cat $T/osnoise/runtime_us) period_us=$(cat $T/osnoise/period_us) tracer=$(cat $T/current_tracer)"
