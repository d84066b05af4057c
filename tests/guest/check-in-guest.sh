#!/bin/sh
# rtscope check inside a QEMU guest (issue 13), in the guest's busybox shell after /proc, /sys
# (and tracefs, debugfs) are mounted. Two ways to run it:
#
#   sh check-in-guest.sh RTSCOPE KIND      # directly (also on the host)
#   guest.py boot rt-amd64 --rtscope BIN --script tests/guest/check-in-guest.sh --env KIND=rt
#                                          # as the guest script of tests/guest/guest.py, which
#                                          # sources it after lib.sh and env.sh (RTSCOPE
#                                          # defaults to `rtscope` on the PATH)
#
# KIND is `rt` for a PREEMPT_RT kernel (the preempt_rt verdict must be ok) or `stock` (it must
# be warn); the host says which kernel it booted, the guest does not guess. Everything rtscope
# prints is copied to the console; the result is ONE marker line:
#
#   RTSCOPE-GUEST check KIND PASS
#   RTSCOPE-GUEST check KIND FAIL <reason>
#
# and, under guest.py (whose lib.sh defines `mark`), the same as `@@RTSCOPE-GUEST check-audit
# KIND PASS|FAIL …`.
#
# Pass/fail never depends on this script's exit code (QEMU's exit code carries nothing), but it
# exits 0 on PASS and 1 on FAIL for callers that run it directly (it runs on the host as well:
# `sh tests/guest/check-in-guest.sh target/debug/rtscope stock`). Busybox ash, grep and awk only.

bin=${1:-rtscope}
kind=${2:-${KIND:-}}
tmp=${TMPDIR:-/tmp}/rtscope-guest-check.$$
mkdir -p "$tmp" || exit 1

result() {
    echo "RTSCOPE-GUEST check $kind $*"
    command -v mark >/dev/null 2>&1 && mark check-audit "$kind $*"
}

fail() {
    result FAIL "$@"
    rm -rf "$tmp"
    exit 1
}

case $kind in rt|stock) ;; *) fail "KIND must be rt or stock, not '$kind'" ;; esac

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
esac

"$bin" check --json >"$tmp/json" 2>&1
jcode=$?
[ "$jcode" = "$code" ] || fail "--json exit $jcode, table exit $code"
grep -q '"schema": "rtscope-check/1"' "$tmp/json" || fail "--json has no schema"
[ "$(grep -c '"id": ' "$tmp/json")" = 32 ] || fail "--json does not list 32 findings"

"$bin" check --cpus 4096 >/dev/null 2>&1
[ $? = 2 ] || fail "--cpus 4096 is not a usage error"

result PASS
rm -rf "$tmp"
exit 0
