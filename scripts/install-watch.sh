#!/usr/bin/env bash
# rtscope watch as a systemd service from a source build (docs/watch.md), what the .deb does:
#   - the binary to $PREFIX/bin/rtscope (default /usr/local),
#   - the unit to /etc/systemd/system/rtscope-watch.service, its ExecStart pointing at that
#     binary (packaging/rtscope-watch.service says /usr/bin/rtscope, the package's path),
#   - the configuration to /etc/rtscope/watch.toml (every key commented out; an existing file is
#     kept),
#   - the man pages to $PREFIX/share/man/man1 (the unit's Documentation=),
# then `systemctl daemon-reload` where systemd runs. Enable it with
# `systemctl enable --now rtscope-watch`.
# Usage: sudo bash scripts/install-watch.sh [BINARY]   (default: target/release/rtscope)
# Environment: PREFIX (/usr/local); DESTDIR, a staging root (nothing is reloaded; the unit still
# names $PREFIX/bin/rtscope, the path on the target).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/rtscope}
prefix=${PREFIX:-/usr/local}
root=${DESTDIR:-}
if ! [ -x "$bin" ]; then
  echo "error: $bin is not an executable: build it first (cargo build --release)" >&2
  exit 2
fi
case "$prefix" in
  /*) ;;
  *) echo "error: PREFIX must be an absolute path, not '$prefix'" >&2; exit 2 ;;
esac
install -D -m 0755 "$bin" "$root$prefix/bin/rtscope"
install -d -m 0755 "$root/etc/systemd/system" "$root/etc/rtscope" "$root$prefix/share/man/man1"
unit="$root/etc/systemd/system/rtscope-watch.service"
sed "s|/usr/bin/rtscope|$prefix/bin/rtscope|g" packaging/rtscope-watch.service >"$unit.tmp"
chmod 0644 "$unit.tmp"
mv -f "$unit.tmp" "$unit"
if [ -e "$root/etc/rtscope/watch.toml" ]; then
  echo "kept $root/etc/rtscope/watch.toml"
else
  install -m 0644 packaging/watch.toml "$root/etc/rtscope/watch.toml"
fi
"$bin" man --dir "$root$prefix/share/man/man1" >/dev/null
if [ -z "$root" ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl daemon-reload
fi
echo "installed $prefix/bin/rtscope and rtscope-watch.service (ExecStart=$prefix/bin/rtscope watch …)"
echo "start it: systemctl enable --now rtscope-watch; configure it in /etc/rtscope/watch.toml"
