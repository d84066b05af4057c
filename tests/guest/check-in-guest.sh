#!/bin/sh
# rtscope check inside a QEMU guest (issue 13): run by the guest harness of tests/guest/ in the
# guest's busybox shell, after /proc and /sys are mounted (tracefs too, if the harness mounts it).
#
#   sh check-in-guest.sh RTSCOPE KIND
#
# RTSCOPE is the rtscope binary inside the guest; KIND is `rt` for a PREEMPT_RT kernel (the
# preempt_rt verdict must be ok) or `stock` (it must not be). Everything rtscope prints is
# copied to the console; the result is ONE marker line the harness greps for:
#
#   RTSCOPE-GUEST check KIND PASS
#   RTSCOPE-GUEST check KIND FAIL <reason>
#
# Pass/fail never depends on this script's exit code (QEMU's exit code carries nothing), but it
# exits 0 on PASS and 1 on FAIL for callers that run it directly (it runs on the host as well:
# `sh tests/guest/check-in-guest.sh target/debug/rtscope stock`). Busybox ash, grep and awk only.

bin=${1:?usage: check-in-guest.sh RTSCOPE rt|stock}
kind=${2:?usage: check-in-guest.sh RTSCOPE rt|stock}
tmp=${TMPDIR:-/tmp}/rtscope-guest-check.$$
mkdir -p "$tmp" || exit 1

fail() {
    echo "RTSCOPE-GUEST check $kind FAIL $*"
    rm -rf "$tmp"
    exit 1
}

"$bin" check >"$tmp/table" 2>"$tmp/err"
code=$?
echo "--- rtscope check (exit $code) ---"
cat "$tmp/table" "$tmp/err"
case $code in 0|1) ;; *) fail "exit code $code" ;; esac
head -n 1 "$tmp/table" | grep -q '^rtscope check: 32 checks for CPUs ' || fail "no header line"
[ -s "$tmp/err" ] && fail "stderr not empty"

# Every row has a known verdict; every warn/bad row is followed by its fix line; 32 rows.
awk '
    NR <= 3 { next }
    $1 == "fix:" { if (!want) bad = bad " stray-fix@" NR; want = 0; next }
    {
        if (want) bad = bad " no-fix@" NR
        if ($1 != "ok" && $1 != "warn" && $1 != "bad" && $1 != "unavailable") bad = bad " verdict@" NR
        want = ($1 == "warn" || $1 == "bad"); rows++
        if ($1 == "bad") nbad++
    }
    END {
        if (want) bad = bad " no-fix@end"
        if (rows != 32) bad = bad " rows=" rows
        if ((nbad > 0) != (code == 1)) bad = bad " exit-code-vs-bad"
        if (bad != "") { print bad; exit 1 }
    }' code="$code" "$tmp/table" >"$tmp/awk" || fail "table:$(cat "$tmp/awk")"

verdict=$(awk '$2 == "preempt_rt" { print $1 }' "$tmp/table")
case $kind in
    rt) [ "$verdict" = ok ] || fail "preempt_rt is '$verdict' on the PREEMPT_RT kernel" ;;
    stock) [ "$verdict" = warn ] || fail "preempt_rt is '$verdict' on the stock kernel" ;;
    *) fail "unknown kind '$kind'" ;;
esac

"$bin" check --json >"$tmp/json" 2>&1
jcode=$?
[ "$jcode" = "$code" ] || fail "--json exit $jcode, table exit $code"
grep -q '"schema": "rtscope-check/1"' "$tmp/json" || fail "--json has no schema"
[ "$(grep -c '"id": ' "$tmp/json")" = 32 ] || fail "--json does not list 32 findings"

"$bin" check --cpus 4096 >/dev/null 2>&1
[ $? = 2 ] || fail "--cpus 4096 is not a usage error"

echo "RTSCOPE-GUEST check $kind PASS"
rm -rf "$tmp"
exit 0
