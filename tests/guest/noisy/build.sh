#!/usr/bin/env bash
# Builds noisy.ko (noisy.c) out of tree for a Debian kernel ABI, against `linux-headers-ABI`
# (installed with apt when missing; root, Debian). amd64 ABIs only: the headers' build tools
# are host binaries.
#
#   bash tests/guest/noisy/build.sh ABI OUTDIR     # e.g. 6.1.0-56-rt-amd64 /tmp/noisy
set -euo pipefail
ABI=${1:?usage: build.sh ABI OUTDIR}
OUT=${2:?usage: build.sh ABI OUTDIR}
case "$ABI" in
  *[!A-Za-z0-9.+-]*) echo "error: bad ABI '$ABI'" >&2; exit 2 ;;
esac
HEADERS=/usr/src/linux-headers-$ABI
export DEBIAN_FRONTEND=noninteractive
need=()
[ -d "$HEADERS" ] || need+=("linux-headers-$ABI")
command -v make >/dev/null || need+=(make)
if [ ${#need[@]} -gt 0 ]; then
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
fi
mkdir -p "$OUT/src"
OUT=$(cd "$OUT" && pwd)
cp "$(dirname "$0")/noisy.c" "$OUT/src/noisy.c"
echo 'obj-m := noisy.o' >"$OUT/src/Kbuild"
make -s -C "$HEADERS" M="$OUT/src" modules >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log" >&2; exit 1; }
cp "$OUT/src/noisy.ko" "$OUT/noisy.ko"
echo "$OUT/noisy.ko"
