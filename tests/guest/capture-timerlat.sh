# Captures the timerlat tier's fixture (crates/rtscope-trace/tests/fixtures/timerlat_rt) in the
# PREEMPT_RT guest: a tracefs instance with the timerlat tracer and the events the tier
# enables, on CPU 1, while the culprit (culprit.c) runs there. As a guest.py script:
#
#   cc -static -O2 -o /tmp/culprit tests/guest/culprit.c
#   python3 tests/guest/guest.py boot rt-amd64 --rtscope target/x86_64-unknown-linux-musl/release/rtscope \
#       --script tests/guest/capture-timerlat.sh --file /tmp/culprit:/root/culprit --save-dir /tmp/cap
#   tar xf /tmp/cap/cap.tar   # cap/{header_page,pages.bin,formats/,trace-head.txt}
#
# The other events enabled here (irq_handler, irq_vectors, softirq, nmi) make trace-head.txt
# readable; the committed fixture keeps only the formats the tier decodes.
T=/sys/kernel/tracing
mark kernel "$(uname -v)"
mark tracers "$(cat $T/available_tracers)"
mark osnoise-events "$(ls $T/events/osnoise | tr '\n' ' ')"
mark osnoise-dir "$(ls $T/osnoise | tr '\n' ' ')"
mark period "$(cat $T/osnoise/timerlat_period_us) cpus $(cat $T/osnoise/cpus)"
I=$T/instances/cap
mkdir $I
echo 0 > $I/tracing_on
echo mono > $I/trace_clock
echo 1 > $I/options/overwrite
echo 2 > $I/tracing_cpumask
echo 2048 > $I/buffer_size_kb
echo 1 > $T/osnoise/cpus; echo 10000 > $T/osnoise/timerlat_period_us
mkdir -p /tmp/cap/formats
cp $T/events/header_page /tmp/cap/header_page
for e in osnoise/irq_noise osnoise/softirq_noise osnoise/nmi_noise osnoise/thread_noise \
    sched/sched_switch sched/sched_waking irq/irq_handler_entry irq/irq_handler_exit \
    irq/softirq_entry irq/softirq_exit nmi/nmi_handler \
    irq_vectors/local_timer_entry irq_vectors/local_timer_exit \
    irq_vectors/reschedule_entry irq_vectors/reschedule_exit \
    irq_vectors/call_function_entry irq_vectors/call_function_exit \
    irq_vectors/call_function_single_entry irq_vectors/call_function_single_exit \
    irq_vectors/irq_work_entry irq_vectors/irq_work_exit; do
  if echo 1 > $I/events/$e/enable; then
    cp $T/events/$e/format /tmp/cap/formats/${e#*/}.format
  else mark enable-failed $e; fi
done
cp $T/events/ftrace/timerlat/format /tmp/cap/formats/timerlat.format
echo timerlat > $I/current_tracer; mark tracer-set "$? $(cat $I/current_tracer)"
echo 1 > $I/tracing_on
/root/culprit 1 12 200 2 &
sleep 2
wait
echo 0 > $I/tracing_on
head -c 200000 $I/trace > /tmp/cap/trace-head.txt
timeout 5 cat $I/per_cpu/cpu1/trace_pipe_raw > /tmp/cap/pages.bin
mark pages "$(wc -c < /tmp/cap/pages.bin)"
echo nop > $I/current_tracer
rmdir $I; mark rmdir $?
echo 0-1 > $T/osnoise/cpus; echo 1000 > $T/osnoise/timerlat_period_us
cd /tmp && tar cf /tmp/cap.tar cap && put_file cap.tar /tmp/cap.tar
