# rtscope respond on a gpio-sim chip, run as root inside the guest (busybox sh; lib.sh is
# sourced by /init, the configfs module is loaded by guest.py). Function, not latency.
#
# The sim chip has 8 lines. Line 0 is I: the stimulus is the simulator's `pull` attribute (the
# simulated outside world pulling the line up or down), which makes the kernel report an edge
# with a timestamp exactly as a real pin does. Line 1 is R: rtscope's responder drives it to
# I's level after each edge; the simulator shows the level a consumer drives in `value`.
#
# Environment (guest.py --env): EDGES (default 200), PERIOD_US (default 20000).
export RTSCOPE_DB=/tmp/gpio.db
EDGES=${EDGES:-200}
PERIOD_US=${PERIOD_US:-20000}
CFG=/sys/kernel/config
SIM=$CFG/gpio-sim/rtscope

check insmod-gpio-sim insmod /root/gpio-sim.ko || exit 1
mount -t configfs configfs "$CFG" 2>/dev/null
mkdir "$SIM" "$SIM/gpio-bank0" "$SIM/gpio-bank0/line0" "$SIM/gpio-bank0/line1"
echo 8 >"$SIM/gpio-bank0/num_lines"
echo stimulus-in >"$SIM/gpio-bank0/line0/name"
echo response-out >"$SIM/gpio-bank0/line1/name"
echo 1 >"$SIM/live"
CHIP=$(cat "$SIM/gpio-bank0/chip_name")
DEV=$(cat "$SIM/dev_name")
mark sim-chip "$CHIP $DEV"
LINE0=/sys/devices/platform/$DEV/$CHIP/sim_gpio0
LINE1=/sys/devices/platform/$DEV/$CHIP/sim_gpio1
[ -e "/dev/$CHIP" ] && [ -e "$LINE0/pull" ] || { mark sim-ready 0; exit 1; }
echo pull-down >"$LINE0/pull"
mark sim-ready 1

check list-lines rtscope respond --list-lines "$CHIP"
mark list-lines-named "$(grep -c 'stimulus-in\|response-out' /tmp/list-lines.log)"

# The responder: SCHED_FIFO 80, external stimulus on I, answers on R, ends after EDGES edges
# (the duration is only a safety net).
rtscope respond --chip "$CHIP" --input 0 --response 1 --loops "$EDGES" -D 300s \
    --policy fifo -p 80 --json /tmp/respond.json -q >/tmp/respond.log 2>&1 &
RESP=$!
# Wait until rtscope holds the input line (its consumer name shows in the line list).
i=0
while [ $i -lt 100 ] && ! rtscope respond --list-lines "$CHIP" 2>/dev/null | grep -q 'rtscope-respond'; do
    usleep 100000
    i=$((i + 1))
done
mark responder-ready "$i"

# A busy line is refused with the line list.
rtscope respond --chip "$CHIP" --input 0 --loops 1 -q >/tmp/busy.log 2>&1
mark busy-rc "$? $(grep -c 'is busy' /tmp/busy.log)"

# The stimulus: EDGES pull changes; after each, the level the responder drove on R as the
# simulator sees it (given up to 1 s to follow).
followed=0
n=0
level=0
while [ $n -lt "$EDGES" ]; do
    if [ $level = 0 ]; then level=1; echo pull-up >"$LINE0/pull"; else level=0; echo pull-down >"$LINE0/pull"; fi
    n=$((n + 1))
    t=0
    while [ "$(cat "$LINE1/value")" != "$level" ] && [ $t -lt 1000 ]; do
        usleep 1000
        t=$((t + 1))
    done
    [ "$(cat "$LINE1/value")" = "$level" ] && followed=$((followed + 1))
    usleep "$PERIOD_US"
done
mark stimulus-edges "$n"
mark levels-followed "$followed"

wait $RESP
mark respond-rc "$?"
cat /tmp/respond.log
[ -f /tmp/respond.json ] && put_file respond.json /tmp/respond.json
[ -f "$RTSCOPE_DB" ] && put_file gpio.db "$RTSCOPE_DB"
put_file respond.log /tmp/respond.log
echo 0 >"$SIM/live"
