#!/usr/bin/env bash
# Builds the gpio-sim kernel module out of tree for a Debian kernel ABI, at test time, from
# Debian's own packages: nothing of the kernel's (GPL) source is kept in this repository.
#
#   bash tests/guest/gpio-sim/build-module.sh ABI OUTDIR     # e.g. 6.1.0-56-amd64 target/gpio-sim
#
# Debian 12's kernels have neither CONFIG_GPIO_SIM nor CONFIG_IRQ_SIM, so the module is
# drivers/gpio/gpio-sim.c (with drivers/gpio/gpiolib.h) and kernel/irq/irq_sim.c from `linux-source-X.Y` linked into one
# gpio-sim.ko, built against `linux-headers-ABI`. One line of irq_sim.c changes: it calls
# `handle_simple_irq(irq_to_desc(irq))`, and irq_to_desc is not exported to modules on 6.1;
# `generic_handle_irq(irq)` does the same through an exported function. The script fails
# loudly if that line is not found (a newer kernel may not need the change).
#
# Installs linux-source-X.Y and linux-headers-ABI with apt when missing (root, Debian).
# Prints the module path and the build time on its last lines.
set -euo pipefail
ABI=${1:?usage: build-module.sh ABI OUTDIR}
OUT=${2:?usage: build-module.sh ABI OUTDIR}
case "$ABI" in
  *[!A-Za-z0-9.+-]*) echo "error: bad ABI '$ABI'" >&2; exit 2 ;;
esac
VER=$(echo "$ABI" | cut -d. -f1,2)          # 6.1.0-56-amd64 -> 6.1
HEADERS=/usr/src/linux-headers-$ABI
TARBALL=/usr/src/linux-source-$VER.tar.xz
export DEBIAN_FRONTEND=noninteractive

need=()
[ -d "$HEADERS" ] || need+=("linux-headers-$ABI")
[ -f "$TARBALL" ] || need+=("linux-source-$VER")
command -v make >/dev/null || need+=(make)
if [ ${#need[@]} -gt 0 ]; then
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
fi

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SRC=$OUT/src
rm -rf "$SRC"
mkdir -p "$SRC"
# Only the three files are extracted (gpiolib.h is gpio-sim's private include) (the tarball is read once; ~20 s for xz on a slow machine).
tar -xJf "$TARBALL" -C "$SRC" --strip-components=3 --wildcards \
  "linux-source-$VER/drivers/gpio/gpio-sim.c" "linux-source-$VER/drivers/gpio/gpiolib.h" \
  "linux-source-$VER/kernel/irq/irq_sim.c"
mv "$SRC/gpio-sim.c" "$SRC/gpio-sim-core.c"

before='handle_simple_irq(irq_to_desc(irqnum));'
after='generic_handle_irq(irqnum);'
if grep -qF "$before" "$SRC/irq_sim.c"; then
  sed -i "s/handle_simple_irq(irq_to_desc(irqnum));/$after/" "$SRC/irq_sim.c"
  grep -qF "$after" "$SRC/irq_sim.c"
  echo "patched irq_sim.c: $before -> $after"
elif grep -q 'irq_to_desc' "$SRC/irq_sim.c"; then
  echo "error: irq_sim.c uses irq_to_desc in a way this script does not know" >&2
  exit 1
fi

cat >"$SRC/Kbuild" <<'EOF'
obj-m := gpio-sim.o
gpio-sim-y := gpio-sim-core.o irq_sim.o
EOF

t0=$(date +%s.%N)
make -s -C "$HEADERS" M="$SRC" modules >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log" >&2; exit 1; }
t1=$(date +%s.%N)
cp "$SRC/gpio-sim.ko" "$OUT/gpio-sim.ko"
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "module build %.1f s\n", b - a }'
echo "$OUT/gpio-sim.ko"
