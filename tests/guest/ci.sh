#!/usr/bin/env bash
# The boards block of CI (.ci/run calls it; self-contained, runs as root on Debian 12):
#  1. installs the cross toolchains and QEMU (only what is missing),
#  2. builds the static x86_64 and aarch64 musl release binaries, both at once, while
#     step 4 fetches the kernels and builds their helpers (each kernel boots once its binary exists),
#  3. lints the musl targets' own code (clippy -D warnings on rtscope-engine, the only crate
#     with target-specific code),
#  4. boots Debian's standard and PREEMPT_RT kernels under QEMU (TCG) and runs the rtscope guest
#     checks (tests/guest/README.md), in one boot per kernel, four at a time: 6.1's amd64,
#     rt-amd64 and rt-arm64 with every check (the RT kernels Debian's `rtla timerlat -a` beside
#     rtscope's stacks, --rtla), the backported 6.12's four (amd64 and arm64, standard and RT)
#     with where-in-the-kernel's checks alone (--stacks-only), with --explain against an independent trace
#     for five kinds of injected noise (tests/guest/noisy) and `rtscope respond` on a gpio-sim
#     chip (amd64); function checks required, load-dependent figures printed (--figures on a
#     quiet host: bench/guest-figures.sh),
#  5. runs `rtscope watch` as a systemd service in a Debian 12 guest, scraped by Prometheus,
#     through a kill -9 and a power cut (tests/guest/watch-systemd).
# Prints the time of each part. Kernels and busybox are cached in $RTSCOPE_GUEST_CACHE
# (default /var/cache/rtscope-guest), outside the repository.
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
secs() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(secs)" 'BEGIN { printf "%.0f", b - a }'; }
times=()

t=$(secs)
need=()
command -v x86_64-linux-musl-gcc >/dev/null || need+=(musl-tools)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
[ -e /usr/lib/aarch64-linux-musl/musl-gcc.specs ] || need+=(musl-dev:arm64)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v qemu-system-aarch64 >/dev/null || need+=(qemu-system-arm)
command -v cpio >/dev/null || need+=(cpio)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v debugfs >/dev/null || need+=(e2fsprogs)
command -v strace >/dev/null || need+=(strace)
if [ ${#need[@]} -gt 0 ] || ! dpkg --print-foreign-architectures | grep -qx arm64; then
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  apt-get update -qq
  [ ${#need[@]} -eq 0 ] || apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
rustup target add x86_64-unknown-linux-musl aarch64-unknown-linux-musl >/dev/null
times+=("tools: $(elapsed "$t") s")

# See scripts/dist.sh for why each target needs its own C compiler (the bundled SQLite).
export CC_x86_64_unknown_linux_musl=x86_64-linux-musl-gcc
export CC_aarch64_unknown_linux_musl=aarch64-linux-musl-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=aarch64-linux-gnu-gcc
logs=target/guest/ci-logs
rm -rf "$logs" && mkdir -p "$logs"
# The two targets at once, each its own cargo in its own target directory (the aarch64 one in
# target/arm64-build, its binary copied to target/aarch64-unknown-linux-musl/release where the
# later stages look), in the background, while the guest checks fetch the kernels and build
# their helpers (noisy.ko, gpio-sim, the culprit): each kernel boots as soon as its
# architecture's binary exists (guest.py check --binaries-ready). Beside the hog: both in one
# cargo invocation came at the end of 1,386 s, nothing else of this block started before; one
# after the other, x86-64 at 906 s and aarch64 at 1,879 s (27 Nov 2026). Two processes get the
# CPU share of two against the hog's, and neither fat-LTO link waits for the other.
# At nice 3 (RTSCOPE_MUSL_NICE) until that build ends (unnice_builds, below): the test build
# of .ci/run, beside them, is on CI's longest path (the end-to-end suite waits for it), the guests only on the second. At the same nice
# the two builds (207 CPU-s quiet for x86-64; 322 for the test build) took the CPU from the
# test build: beside the hog the musl binaries were done at 1,012 and 1,165 s, the test build
# at 1,796 s, and the test stage ended CI at 3,524 s (29 Nov 2026).
# boot_after TRIPLE: with RTSCOPE_BOOT_AFTER=FILE (.ci/run: the end of its test build, on CI's
# longest path), the kernels of TRIPLE's binary boot only once FILE exists too (at most an hour):
# the emulators at nice -5 would take the CPU from that build.
boot_after() {
  local t0
  [ -n "${RTSCOPE_BOOT_AFTER:-}" ] || return 0
  t0=$(secs)
  while [ ! -e "$RTSCOPE_BOOT_AFTER" ] && [ "$(elapsed "$t0")" -lt 3600 ]; do sleep 2; done
  echo "boots of $1 waited $(elapsed "$t0") s for $RTSCOPE_BOOT_AFTER" >>"$logs/build-times"
}
ready=$(mktemp -d)
arm_dir=target/arm64-build
build_musl() {
  local triple=$1 arch=$2 dir=$3 t0
  t0=$(secs)
  if CARGO_TARGET_DIR=$dir nice -n "${RTSCOPE_MUSL_NICE:-3}" \
    cargo build --release --locked -p rtscope --target "$triple"; then
    if [ "$dir" != target ]; then
      mkdir -p "target/$triple/release"
      cp "$dir/$triple/release/rtscope" "target/$triple/release/rtscope"
    fi
    echo "build $triple: $(elapsed "$t0") s, $(stat -c %s "target/$triple/release/rtscope") bytes" \
      >>"$logs/build-times"
    boot_after "$triple"
    touch "$ready/$arch"
  else
    echo "build $triple: FAILED after $(elapsed "$t0") s" >>"$logs/build-times"
    touch "$ready/$arch.failed"
    return 1
  fi
}
# The watch guest's Debian root file system (mmdebstrap, once per machine: downloads and dpkg)
# from the start, beside the builds: built where step 5 needs it, it ran past its timeout
# beside the hog (28 Nov 2026).
t_rootfs=$(secs)
(python3 tests/guest/watch-systemd/run.py --rootfs-only >"$logs/rootfs.log" 2>&1
 echo "$? $(elapsed "$t_rootfs")" >"$logs/rootfs.status") &
rootfs=$!
t_build=$(secs)
build_musl x86_64-unknown-linux-musl amd64 target >"$logs/musl-x86.log" 2>&1 &
build_x86=$!
build_musl aarch64-unknown-linux-musl arm64 "$arm_dir" >"$logs/musl-arm.log" 2>&1 &
build_arm=$!
# descendants PID…: those processes and all of theirs.
descendants() {
  ps -eo pid=,ppid= | awk -v roots="$*" '
    BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
    { parent[$1] = $2 }
    END {
      do { grew = 0; for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 } } while (grew)
      for (p in keep) print p
    }'
}
# Once the test build of .ci/run has ended (RTSCOPE_BOOT_AFTER), the musl builds still running
# go back to nice 0 (cargo and its compilers; those cargo starts after inherit it): at nice 3
# they then competed with the end-to-end suite and the hog alone, and ended 321 and 405 s after
# the test build beside the hog (29 Nov 2026), the guests' boots waiting for them.
unnice_builds() {
  [ -n "${RTSCOPE_BOOT_AFTER:-}" ] && [ "${RTSCOPE_MUSL_NICE:-3}" != 0 ] || return 0
  while [ ! -e "$RTSCOPE_BOOT_AFTER" ]; do
    kill -0 "$build_x86" 2>/dev/null || kill -0 "$build_arm" 2>/dev/null || return 0
    sleep 2
  done
  for _ in 1 2; do   # twice: a compiler cargo started while the first pass ran
    descendants "$build_x86" "$build_arm" | xargs -r renice -n 0 -p >/dev/null 2>&1
    sleep 1
  done
  echo "musl builds at nice 0 from $(elapsed "$t_build") s (the test build ended)" >>"$logs/build-times"
}
unnice_builds &

status=0
# The host-side replay of the reference instance (reference.py) on small traces and the noise
# comparison's figures (noise_checks.py), first.
(cd tests/guest && python3 -m unittest test_reference test_noise_checks test_noisy_checks test_rtla_checks test_answer_checks test_explain_ebpf_checks test_port) || status=1
# One boot per kernel runs all of its checks (checks.py): the rtscope checks, --explain with
# the injected culprit against the reference instance (on the tracefs and the eBPF recorders:
# explain_ebpf_checks.py), the noise of each known kind against the
# same reference (tests/guest/noisy: preemption off, interrupts off, an interrupt storm, softirq
# work, network receive; noisy.ko built against each kernel's Debian headers), each under
# `measure --explain` and `noise --explain`, and on amd64 `rtscope respond` on a gpio-sim chip
# (built out of tree from Debian's linux-source). CI requires the function checks (it ran, named
# the culprit, kept the data); the figures that depend on the host's load (the reference bar's
# agreement, noise against osnoise) are FIGURE lines and target/guest/figures.json, required
# only on a quiet host (`--figures`: bench/guest-figures.sh, BENCHMARKS.md). So the four
# kernels boot at once (--parallel): about one boot's time instead of four on a loaded host.
# The four backported kernels (Linux 6.12, `bpo-…`: standard and RT, amd64 and arm64) run only
# issue 53's function checks of where in the kernel, under `measure --explain` and `noise
# --explain`: the preempt- and irq-off sections' kernel stacks, the IPI handler's and the
# tasklet's functions, which 6.1 has no events to name (its three kernels check that their runs
# say so). The RT kernels also run Debian's `rtla timerlat -a` on the preempt and irq sections,
# whose stack must name the function rtscope's stacks name (rtla_checks.py). Five boot at a time
# (--parallel 5), each as soon as it is prepared and its binary built: the three long boots of
# 6.1 and two short ones, then the other two short ones. Four at a time queued three short
# boots one after the other in one slot, the stage's longest chain beside the hog (28 Nov
# 2026: 1,596 s of preparation, then that slot ended last). The outer timeout covers an RT
# guest's full list beside the hog (1,800 s cut two of them short, 28 Nov 2026); a hang inside
# is caught earlier by the guest's own watchdogs (lib.sh check_within) and silent-console dumps.
t=$(secs)
python3 tests/guest/guest.py check \
  --timeout 2400 \
  --kernels amd64,rt-amd64,rt-arm64,bpo-amd64,bpo-rt-amd64,bpo-arm64,bpo-rt-arm64 \
  --explain-kernels amd64,rt-amd64,rt-arm64 --parallel 5 \
  --noisy preempt,irq,storm,softirq,net \
  --stacks-only bpo-amd64,bpo-rt-amd64,bpo-arm64,bpo-rt-arm64 \
  --rtla rt-amd64,rt-arm64 \
  --gpio-sim amd64 \
  --binaries-ready "$ready" \
  --rtscope-amd64 target/x86_64-unknown-linux-musl/release/rtscope \
  --rtscope-arm64 target/aarch64-unknown-linux-musl/release/rtscope \
  --out target/guest >"$logs/guests.log" 2>&1 &
guests=$!

build_status=0
wait "$build_x86" || build_status=1
wait "$build_arm" || build_status=1
cat "$logs/musl-x86.log" "$logs/musl-arm.log"
while read -r line; do times+=("$line"); done <"$logs/build-times"
times+=("build (both musl targets at once): $(elapsed "$t_build") s")
[ "$build_status" -eq 0 ] || status=1

if [ "$build_status" -eq 0 ]; then
  # The release binaries within their size budgets (scripts/budgets.sh), checked where they are
  # built: a feature that grows them past the budget fails CI, not a board's flash.
  # shellcheck source=scripts/budgets.sh
  . scripts/budgets.sh
  for triple in x86_64-unknown-linux-musl aarch64-unknown-linux-musl; do
    within_budget "$triple" "target/$triple/release/rtscope" || status=1
  done
  # Beside the budget, each crate's share against the last main build on this machine
  # (scripts/crate-sizes.sh: the rlibs the build above left; saved here when this is main).
  # Printed, never failing: growth is seen, not fought line by line.
  sizes=${RTSCOPE_GUEST_CACHE:-/var/cache/rtscope-guest}/crate-sizes
  save=0
  [ "$(git rev-parse --abbrev-ref HEAD 2>/dev/null || true)" != main ] || save=1
  RTSCOPE_SIZES_SAVE=$save bash scripts/crate-sizes.sh x86_64-unknown-linux-musl \
    "$sizes/x86_64-unknown-linux-musl.tsv" || true
  RTSCOPE_SIZES_SAVE=$save CARGO_TARGET_DIR=$arm_dir bash scripts/crate-sizes.sh \
    aarch64-unknown-linux-musl "$sizes/aarch64-unknown-linux-musl.tsv" || true
  # The static binary hands no memory back to the kernel gap by gap (crates/rtscope/src/alloc.rs:
  # each munmap interrupts the measured CPU with a TLB flush): counted with strace on the host.
  python3 tests/host/munmaps.py target/x86_64-unknown-linux-musl/release/rtscope || status=1
fi

# Clippy for the musl targets lints only what differs from the host's: the code a target
# attribute compiles out (`#[cfg(target_…)]`, `cfg_attr`) lives in rtscope-engine alone (checked
# below), the binary's musl allocator is linted on every target (cfg(clippy),
# crates/rtscope/src/main.rs), and both targets' release builds above compile everything else.
# A `cfg!(target_…)` expression is not such code: both of its branches are compiled, and linted,
# on every target (rtscope-bpf's recorder chooses how a record is published with one). The
# whole workspace's clippy for both musl targets took 523 s beside the guests; this takes
# seconds.
t_lint=$(secs)
outside=$(grep -rlE '(#!?\[cfg|cfg_attr)\(.*target_(arch|env|os)' crates/*/src |
  grep -v '^crates/rtscope-engine/' |
  grep -vx 'crates/rtscope/src/main.rs' || true)
if [ -n "$outside" ]; then
  echo "code compiled out by a target attribute outside rtscope-engine (the musl targets' clippy would not see it):" >&2
  echo "$outside" >&2
  status=1
fi
# Its own target directory: no lock shared with the test stage's build, which .ci/run runs at
# the same time.
CARGO_TARGET_DIR=target/lint-musl cargo clippy --locked -p rtscope-engine --lib \
  --target x86_64-unknown-linux-musl --target aarch64-unknown-linux-musl -- -D warnings ||
  status=1
times+=("clippy (rtscope-engine, musl targets): $(elapsed "$t_lint") s")

# rtscope watch as a systemd service in a Debian 12 guest (tests/guest/watch-systemd/run.py):
# systemctl start, a real Prometheus scraping /metrics from the host, kill -9, a power cut.
# About 3 minutes with the root file system cached; its first build (mmdebstrap) downloads
# ~140 MB of packages once. The timeout covers that first build (at most 900 s) and two boots
# at their own timeout (900 s each: beside the hog and the musl clippy one boot took over 600).
# It runs beside the arm64 guests, once the binaries are built.
wait "$rootfs" || true
cat "$logs/rootfs.log"
read -r rootfs_rc rootfs_s <"$logs/rootfs.status" || rootfs_rc=1
times+=("watch's root file system (from the start): ${rootfs_s:-?} s")
t_watch=$(secs)
if [ "$rootfs_rc" -ne 0 ]; then
  echo "watch under systemd: not run, its root file system was not built" >&2
  status=1
elif [ "$build_status" -eq 0 ]; then
  timeout -k 30 2700 python3 tests/guest/watch-systemd/run.py \
    --rtscope target/x86_64-unknown-linux-musl/release/rtscope \
    --out target/guest/watch-systemd || status=1
else
  echo "watch under systemd: not run, the x86-64 binary was not built" >&2
  status=1
fi
times+=("watch under systemd (2 boots, Prometheus): $(elapsed "$t_watch") s")

wait "$guests" || status=1
cat "$logs/guests.log"
times+=("guest tests (7 kernels, one boot each, from before the builds): $(elapsed "$t") s")
printf 'boards CI block: %s\n' "${times[@]}"
exit "$status"
