#!/usr/bin/env bash
# Builds noisy.ko (noisy.c) out of tree for a Debian kernel ABI (root, Debian).
#   amd64 ABIs: against `linux-headers-ABI` (installed with apt when missing).
#   arm64 ABIs: cross-built with aarch64-linux-gnu-gcc against the arm64 headers, downloaded
#     and unpacked (not installed: their package wants the arm64 gcc-12); their kbuild tools
#     (fixdep, modpost) are arm64 programs, run through qemu-aarch64-static and binfmt_misc
#     (registered here when absent, and removed again) with libc6:arm64.
#
#   bash tests/guest/noisy/build.sh ABI OUTDIR     # e.g. 6.1.0-56-rt-amd64 /tmp/noisy
set -euo pipefail
ABI=${1:?usage: build.sh ABI OUTDIR}
OUT=${2:?usage: build.sh ABI OUTDIR}
case "$ABI" in
  *[!A-Za-z0-9.+-]*) echo "error: bad ABI '$ABI'" >&2; exit 2 ;;
esac
export DEBIAN_FRONTEND=noninteractive
# apt_need PACKAGE…: installs the packages (an apt-get update first if the lists are old).
apt_need() {
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" >/dev/null; }
}
mkdir -p "$OUT/src"
OUT=$(cd "$OUT" && pwd)
cp "$(dirname "$0")/noisy.c" "$OUT/src/noisy.c"
echo 'obj-m := noisy.o' >"$OUT/src/Kbuild"
make_args=()
case "$ABI" in
  *-arm64)
    need=()
    command -v make >/dev/null || need+=(make)
    command -v aarch64-linux-gnu-gcc-12 >/dev/null || need+=(gcc-aarch64-linux-gnu)
    [ -e /usr/bin/qemu-aarch64-static ] || need+=(qemu-user-static)
    [ -e /lib/ld-linux-aarch64.so.1 ] || need+=(libc6:arm64)
    # 6.12's kbuild tools (objtool's and modpost's helpers) link libelf.
    [ -e /usr/lib/aarch64-linux-gnu/libelf.so.1 ] || need+=(libelf1:arm64)
    dpkg --print-foreign-architectures | grep -qx arm64 || { dpkg --add-architecture arm64; apt-get update -qq; }
    [ ${#need[@]} -eq 0 ] || apt_need "${need[@]}"
    ROOT=$OUT/arm64-headers
    HEADERS=$ROOT/usr/src/linux-headers-$ABI
    if [ ! -d "$HEADERS" ]; then
      mkdir -p "$ROOT/debs"
      (cd "$ROOT/debs" && apt-get download -o APT::Sandbox::User=root "linux-headers-$ABI:arm64" >/dev/null)
      for d in "$ROOT"/debs/*.deb; do dpkg-deb -x "$d" "$ROOT"; done
      # The arch package's Makefile includes the common headers by absolute path; its scripts
      # link to the kbuild tools of its version.
      common=$(sed -n 's|^include /usr/src/\([^/]*\)/Makefile$|\1|p' "$HEADERS/Makefile")
      kbuild=$(readlink "$HEADERS/scripts" | sed -n 's|.*/lib/\(linux-kbuild-[^/]*\)/scripts$|\1|p')
      [ -n "$common" ] && [ -n "$kbuild" ] || { echo "error: unexpected layout of $HEADERS" >&2; exit 1; }
      [ -d "/usr/src/$common" ] || apt_need "$common"
      # The common headers' scripts link to the host's kbuild of that version (its makefiles):
      # installed with the amd64 headers when an amd64 module was built first, else here.
      [ -d "/usr/lib/$kbuild/scripts" ] || apt_need "$kbuild"
      (cd "$ROOT/debs" && apt-get download -o APT::Sandbox::User=root "$kbuild:arm64" >/dev/null)
      dpkg-deb -x "$ROOT"/debs/"$kbuild"_*_arm64.deb "$ROOT"
    fi
    B=/proc/sys/fs/binfmt_misc
    [ -e $B/register ] || mount -t binfmt_misc binfmt_misc $B
    if [ ! -e $B/qemu-aarch64 ]; then
      printf '%s' ':qemu-aarch64:M:0:\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64-static:F' >$B/register
      trap 'echo -1 > /proc/sys/fs/binfmt_misc/qemu-aarch64' EXIT
    fi
    make_args=(DEB_BUILD_ARCH=amd64 DEB_HOST_ARCH=arm64 DEB_HOST_GNU_TYPE=aarch64-linux-gnu)
    ;;
  *)
    HEADERS=/usr/src/linux-headers-$ABI
    need=()
    [ -d "$HEADERS" ] || need+=("linux-headers-$ABI")
    command -v make >/dev/null || need+=(make)
    [ ${#need[@]} -eq 0 ] || apt_need "${need[@]}"
    ;;
esac
make -s -C "$HEADERS" M="$OUT/src" "${make_args[@]}" modules >"$OUT/build.log" 2>&1 \
  || { cat "$OUT/build.log" >&2; exit 1; }
cp "$OUT/src/noisy.ko" "$OUT/noisy.ko"
echo "$OUT/noisy.ko"
