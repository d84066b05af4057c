#!/usr/bin/env bash
# Builds an rtscope release into dist/ with one command (as root on Debian 12 / Ubuntu):
#
#   bash scripts/dist.sh            # everything below
#   bash scripts/dist.sh --no-smoke # without running the ARM binaries under qemu-user
#
#  1. installs what it needs (musl-tools, the aarch64/armhf cross compilers and musl-dev:arm64,
#     qemu-user-static, the Rust targets) — only what is missing;
#  2. builds three static binaries: x86_64-unknown-linux-musl, aarch64-unknown-linux-musl and
#     32-bit ARM as thumbv7neon-unknown-linux-gnueabihf (ARMv7-A with NEON, Thumb-2 code) linked
#     fully static with +crt-static (rustup serves no standard library for
#     armv7-unknown-linux-musleabihf: its download returns 404; ARM-mode code was over budget);
#  3. generates the man pages (one per subcommand) and the bash/zsh/fish completions from the
#     CLI definition (`rtscope man --dir`, `rtscope completions`, crate rtscope-manual);
#  4. packages amd64, arm64 and armhf .debs with dpkg-deb (binary, man pages, completions, no
#     Depends: the binary is static);
#  5. checks each binary is static and at most 4,000,000 bytes, runs the ARM binaries'
#     `measure`, `runs` and `report` under qemu-user, and writes dist/SHA256SUMS.
#
# Sizes and times go to stdout (BENCHMARKS.md, "Release binaries").
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

smoke=1
[ "${1:-}" = "--no-smoke" ] && smoke=0
# Budgets (issue 28): scripts/budgets.sh, shared with the CI's guest stage.
# shellcheck source=scripts/budgets.sh
. scripts/budgets.sh
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
DIST=dist
secs() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(secs)" 'BEGIN { printf "%.0f", b - a }'; }

# ---- 1. what the build needs ---------------------------------------------------------------
t0=$(secs)
need=()
command -v x86_64-linux-musl-gcc >/dev/null || need+=(musl-tools)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
[ -e /usr/lib/aarch64-linux-musl/musl-gcc.specs ] || need+=(musl-dev:arm64)
command -v arm-linux-gnueabihf-gcc >/dev/null || need+=(gcc-arm-linux-gnueabihf libc6-dev-armhf-cross)
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v file >/dev/null || need+=(file)
command -v dpkg-deb >/dev/null || need+=(dpkg)
if [ ${#need[@]} -gt 0 ]; then
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
rustup target add x86_64-unknown-linux-musl aarch64-unknown-linux-musl thumbv7neon-unknown-linux-gnueabihf >/dev/null
echo "tools ready in $(elapsed "$t0") s"

# ---- 2. the static binaries ----------------------------------------------------------------
# The bundled SQLite is C: each target gets a C compiler for its libc. Debian's aarch64 gcc with
# glibc headers breaks the musl link (open64, fstat64 …); musl-dev:arm64's wrapper compiles
# against musl's headers instead.
export CC_x86_64_unknown_linux_musl=x86_64-linux-musl-gcc
export CC_aarch64_unknown_linux_musl=aarch64-linux-musl-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=aarch64-linux-gnu-gcc
export CC_thumbv7neon_unknown_linux_gnueabihf=arm-linux-gnueabihf-gcc
export CARGO_TARGET_THUMBV7NEON_UNKNOWN_LINUX_GNUEABIHF_LINKER=arm-linux-gnueabihf-gcc
# +crt-static, not position-independent, Thumb-2 C code: .cargo/config.toml.

# target triple | Debian architecture | file name suffix
targets=(
  "x86_64-unknown-linux-musl amd64 x86_64-linux-musl"
  "aarch64-unknown-linux-musl arm64 aarch64-linux-musl"
  "thumbv7neon-unknown-linux-gnueabihf armhf armv7-linux-gnueabihf-static"
)
rm -rf "$DIST"
mkdir -p "$DIST"
declare -A build_s
for t in "${targets[@]}"; do
  read -r triple _ suffix <<<"$t"
  t1=$(secs)
  nice -n 10 cargo build --release --locked -p rtscope --target "$triple"
  build_s[$triple]=$(elapsed "$t1")
  cp "target/$triple/release/rtscope" "$DIST/rtscope-$VERSION-$suffix"
done

# ---- 3. man pages and completions, from the CLI definition ---------------------------------
host_bin="$DIST/rtscope-$VERSION-x86_64-linux-musl"
"$host_bin" man --dir "$DIST/man/man1" >/dev/null
mkdir -p "$DIST/completions"
"$host_bin" completions bash >"$DIST/completions/rtscope.bash"
"$host_bin" completions zsh >"$DIST/completions/_rtscope"
"$host_bin" completions fish >"$DIST/completions/rtscope.fish"

# ---- 4. .debs ------------------------------------------------------------------------------
deb() {
  local triple=$1 arch=$2 suffix=$3 root
  root=$(mktemp -d)
  install -Dm755 "$DIST/rtscope-$VERSION-$suffix" "$root/usr/bin/rtscope"
  for page in "$DIST"/man/man1/*.1; do
    install -Dm644 "$page" "$root/usr/share/man/man1/$(basename "$page")"
    gzip -9n "$root/usr/share/man/man1/$(basename "$page")"
  done
  install -Dm644 "$DIST/completions/rtscope.bash" "$root/usr/share/bash-completion/completions/rtscope"
  install -Dm644 "$DIST/completions/_rtscope" "$root/usr/share/zsh/vendor-completions/_rtscope"
  install -Dm644 "$DIST/completions/rtscope.fish" "$root/usr/share/fish/vendor_completions.d/rtscope.fish"
  # rtscope watch as a service, installed disabled (docs/watch.md); its configuration a conffile.
  install -Dm644 packaging/rtscope-watch.service "$root/lib/systemd/system/rtscope-watch.service"
  install -Dm644 packaging/watch.toml "$root/etc/rtscope/watch.toml"
  install -Dm644 README.md "$root/usr/share/doc/rtscope/README.md"
  gzip -9n "$root/usr/share/doc/rtscope/README.md"
  printf 'rtscope %s (%s)\nLicense: MIT OR Apache-2.0\n' "$VERSION" "$triple" \
    >"$root/usr/share/doc/rtscope/copyright"
  mkdir -p "$root/DEBIAN"
  echo /etc/rtscope/watch.toml >"$root/DEBIAN/conffiles"
  cat >"$root/DEBIAN/control" <<EOF
Package: rtscope
Version: $VERSION
Architecture: $arch
Maintainer: rtscope developers <rtscope@example.invalid>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Section: utils
Priority: optional
Homepage: https://example.invalid/rtscope
Description: timer wake-up latency for real-time Linux
 Measures how late real-time tasks wake up (typical, tail and worst case) per CPU,
 idle and under built-in loads, with system monitors, a run database, reports and
 comparisons. A drop-in replacement for cyclictest. One static binary ($triple):
 no dependencies.
EOF
  dpkg-deb --root-owner-group -Zxz --build "$root" "$DIST/rtscope_${VERSION}_$arch.deb" >/dev/null
  rm -rf "$root"
}
t1=$(secs)
for t in "${targets[@]}"; do
  # shellcheck disable=SC2086
  deb $t
done
deb_s=$(elapsed "$t1")

# ---- 5. checks and SHA256SUMS --------------------------------------------------------------
status=0
printf '\n%-46s %10s %8s  %s\n' file bytes build_s "file(1)"
for t in "${targets[@]}"; do
  read -r triple arch suffix <<<"$t"
  f="$DIST/rtscope-$VERSION-$suffix"
  size=$(stat -c %s "$f")
  desc=$(file -b "$f")
  printf '%-46s %10s %8s  %s\n' "$(basename "$f")" "$size" "${build_s[$triple]}" "$desc"
  case "$desc" in
    *"statically linked"* | *"static-pie linked"*) ;;
    *) echo "error: $f is not statically linked" >&2; status=1 ;;
  esac
  max_bytes=$(budget "$triple")
  if [ "$size" -gt "$max_bytes" ]; then
    echo "error: $f is $size bytes, over the $max_bytes-byte budget" >&2
    status=1
  fi
done
for d in "$DIST"/*.deb; do
  printf '%-46s %10s\n' "$(basename "$d")" "$(stat -c %s "$d")"
  dpkg-deb -f "$d" Depends | grep -q . && { echo "error: $d has Depends" >&2; status=1; }
done
echo ".debs packaged in $deb_s s"

if [ "$smoke" = 1 ]; then
  bash scripts/qemu-user-smoke.sh "$DIST/rtscope-$VERSION-aarch64-linux-musl" qemu-aarch64-static || status=1
  bash scripts/qemu-user-smoke.sh "$DIST/rtscope-$VERSION-armv7-linux-gnueabihf-static" qemu-arm-static || status=1
fi

(cd "$DIST" && find . -type f ! -name SHA256SUMS | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
echo "dist/ written in $(elapsed "$t0") s"
exit "$status"
