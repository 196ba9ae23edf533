#!/usr/bin/env bash
# Renders every PNG in icons/ from the SVG sources next to them (offline: rsvg-convert from
# librsvg2-bin). The PNGs are committed because Tauri reads them at compile time; run this after
# editing an SVG and commit both.
set -euo pipefail
cd "$(dirname "$0")/../icons"
command -v rsvg-convert >/dev/null || { echo "rsvg-convert missing: apt install librsvg2-bin" >&2; exit 1; }
for size in 32 128 256 512; do
  rsvg-convert -w "$size" -h "$size" gatehouse.svg -o "${size}x${size}.png"
done
cp 256x256.png 128x128@2x.png
cp 512x512.png icon.png
rsvg-convert -w 64 -h 64 tray.svg -o tray.png
rsvg-convert -w 64 -h 64 tray-pending.svg -o tray-pending.png
