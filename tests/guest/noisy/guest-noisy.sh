# Guest script of noisy/run.py: for each MODES entry (preempt, irq), loads noisy.ko on CPU 1
# (10 ms of preemption or interrupts off every 100 ms), runs `rtscope measure --explain` on CPU
# 1 with the reference instance recording (lib.sh reference_start/stop), and sends rtscope's
# JSON and the reference trace back.
for mode in ${MODES:-preempt irq}; do
    insmod /root/noisy.ko mode=$mode cpu=1 busy_ms=10 period_ms=100
    mark insmod "$mode $?"
    reference_start
    check "explain-$mode" rtscope measure -D 6s -i 1ms --cpus 1 -p 80 --explain 1.5ms --explain-keep 100 -q \
        --no-db --json "/tmp/explain-$mode.json"
    reference_stop "reference-$mode.txt"
    rmmod noisy
    mark rmmod "$mode $?"
    mark explain-tier "$mode $(sed -n 's/.*explaining spikes: tier \([a-z-]*\).*/\1/p' /tmp/explain-$mode.log | head -n 1)"
    [ -f "/tmp/explain-$mode.json" ] && put_file "explain-$mode.json" "/tmp/explain-$mode.json"
    put_log "explain-$mode"
done
