#!/usr/bin/env bash
# What a board costs the fleet beyond its measurement (issue 28): 8 loopback "boards" (an sshd
# each on 127.0.0.2 … 127.0.0.9, private host keys and authorized key, in their own mount
# namespace with a private /tmp, as crates/rtscope/tests/fleet_ssh.rs starts them), then
#   rtscope measure --duration 2s --target <the 8 boards> --target-jobs 8   (in parallel)
#   rtscope measure --duration 2s --target <the 8 boards> --target-jobs 1   (one at a time)
# Prints both wall times, the overhead per board ((wall at jobs 1) / 8 - 2 s) and the ssh
# connections each board's sshd accepted per command (LogLevel VERBOSE: one is the design).
# The boards share this machine's CPUs: at jobs 8 the eight measurements run side by side.
#
# Usage: bash bench/fleet.sh [--check]
#   --check  2 boards, a 1 s measurement: exits 1 when a board took more than one ssh
#            connection for a command (the growth to catch; no time is checked)
# Environment: RTSCOPE (binary, default target/release/rtscope, built if missing; a stripped
#   copy is what runs here and is copied to the boards, as a release binary would be),
#   KEEP=1 (keep the work directory and print it).
# Needs root (the boards' mount namespaces), openssh-server and openssh-client, unshare.
. "$(dirname "$0")/lib.sh" "$@"
shift "$check"
if ((check)); then boards=2 duration=1; else boards=8 duration=2; fi
sshd=/usr/sbin/sshd
[[ $(id -u) == 0 ]] || { echo "bench/fleet.sh: needs root (the boards' sshd run in their own mount namespace)" >&2; exit 2; }
[[ -x $sshd ]] && command -v ssh >/dev/null && command -v unshare >/dev/null || {
  echo "bench/fleet.sh: needs $sshd, ssh and unshare (apt-get install openssh-server openssh-client util-linux)" >&2
  exit 2
}
release_bin

# Directly under /tmp: the boards' namespaces mount it back at its own path inside their /tmp.
work=$(mktemp -d /tmp/rtscope-fleet-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ -n ${KEEP:-} ]]; then echo "kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
mkdir -p "$work/tmp" "$work/ltmp" /run/sshd
chmod 1777 "$work/tmp"
strip -o "$work/rtscope" "$bin" 2>/dev/null || cp "$bin" "$work/rtscope"
ssh-keygen -q -t ed25519 -N "" -f "$work/host_key"
ssh-keygen -q -t ed25519 -N "" -f "$work/id"
cp "$work/id.pub" "$work/authorized_keys"
cat >"$work/ssh_config" <<EOF
Host *
  IdentityFile $work/id
  IdentitiesOnly yes
  UserKnownHostsFile $work/known_hosts
  StrictHostKeyChecking accept-new
  LogLevel ERROR
EOF

# A free TCP port on ADDR.
free_port() {
  python3 -c 'import socket,sys; s=socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$1"
}

targets=()
addrs=()
for i in $(seq 2 $((boards + 1))); do
  addr=127.0.0.$i
  port=$(free_port "$addr")
  conf=$work/sshd-$addr.conf
  cat >"$conf" <<EOF
Port $port
ListenAddress $addr
HostKey $work/host_key
PidFile $work/sshd-$addr.pid
AuthorizedKeysFile $work/authorized_keys
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
LogLevel VERBOSE
EOF
  # The boards' /tmp is $work/tmp, mounted over /tmp in sshd's namespace only; $work is
  # mounted back at its own path inside it (keys, configuration).
  unshare --mount --propagation private sh -c \
    'set -e; m="$2/${1##*/}"; mkdir -p "$m"; mount --bind "$1" "$m"; mount --rbind "$2" /tmp; exec "$3" -D -e -f "$4"' \
    sh "$work" "$work/tmp" "$sshd" "$conf" </dev/null >"$work/sshd-$addr.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 300); do
    grep -q "Server listening on" "$work/sshd-$addr.log" 2>/dev/null && break
    sleep 0.1
  done
  grep -q "Server listening on" "$work/sshd-$addr.log" || { cat "$work/sshd-$addr.log" >&2; exit 2; }
  targets+=(--target "root@$addr:$port")
  addrs+=("$addr")
done

# accepted ADDR: the connections ADDR's sshd authenticated so far.
accepted() { grep -c "Accepted publickey for " "$work/sshd-$1.log" || true; }

# run JOBS: one fleet measurement; sets wall (s) and conns (per board, this command).
run() {
  local before=() i=0 t0 t1
  for a in "${addrs[@]}"; do before+=("$(accepted "$a")"); done
  t0=$(date +%s.%N)
  if ! TMPDIR=$work/ltmp RTSCOPE_SSH="ssh -F $work/ssh_config" "$work/rtscope" measure \
    --duration "${duration}s" -q --db "$work/lab.db" --target-jobs "$1" "${targets[@]}" \
    >"$work/out-$1.log" 2>"$work/err-$1.log"; then
    # 1 is a limit exceeded: none is set, so any failure is the fleet's.
    cat "$work/out-$1.log" "$work/err-$1.log" >&2
    exit 2
  fi
  t1=$(date +%s.%N)
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  conns=()
  for a in "${addrs[@]}"; do
    conns+=($(($(accepted "$a") - before[i])))
    i=$((i + 1))
  done
  if [[ -n $(ls -A "$work/ltmp") ]]; then
    echo "bench/fleet.sh: left in the local TMPDIR: $(ls -A "$work/ltmp")" >&2
    exit 1
  fi
}

echo "binary: $bin ($(stat -c %s "$work/rtscope") bytes stripped); $boards boards, ${duration} s each;" \
  "$(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
bad=0
declare -A walls
for jobs in "$boards" 1; do
  run "$jobs"
  walls[$jobs]=$wall
  printf 'target-jobs %-2s  wall %6.2f s  ssh connections per board: %s\n' "$jobs" "$wall" "${conns[*]}"
  for c in "${conns[@]}"; do [[ $c == 1 ]] || bad=1; done
done
overhead=$(awk -v w="${walls[1]}" -v n="$boards" -v d="$duration" 'BEGIN { printf "%.3f", w / n - d }')
printf 'overhead per board at target-jobs 1: %.2f s  ((wall %.2f s) / %d - %d s)\n' \
  "$overhead" "${walls[1]}" "$boards" "$duration"
printf 'steps of the last board (stderr of the jobs-1 run):\n'
grep "^rtscope: \[127.0.0.$((boards + 1))\]" "$work/err-1.log" | sed 's/^/  /'
if ((bad)); then
  echo "bench/fleet.sh: a board took more than one ssh connection for a command" >&2
  exit 1
fi
