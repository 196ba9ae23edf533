#!/usr/bin/env bash
# Installs the system packages Gatehouse needs on Debian/Ubuntu, only those that are missing.
# Idempotent and non-interactive. Rust itself is expected (rustup); we say so if it is not there.
set -euo pipefail

log() { printf '[install-deps] %s\n' "$*" >&2; }

if ! command -v cargo >/dev/null 2>&1; then
  log "Rust is missing: install it with rustup (https://rustup.rs), then run this again."
  exit 1
fi

missing=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }

have_cmd cc || missing+=(build-essential)
have_cmd pkg-config || missing+=(pkg-config)
have_cmd node || missing+=(nodejs)
have_cmd npm || missing+=(npm)
have_cmd python3 || missing+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
# The keychain tests run a private D-Bus session with an unlocked gnome-keyring (PEERS.md).
have_cmd dbus-run-session || missing+=(dbus dbus-bin)
have_cmd gnome-keyring-daemon || missing+=(gnome-keyring)
# The desktop app (Tauri 2 on WebKitGTK) and its end-to-end tests under Xvfb (PEERS.md).
have_pkg libwebkit2gtk-4.1-dev || missing+=(libwebkit2gtk-4.1-dev)
have_pkg libayatana-appindicator3-1 || missing+=(libayatana-appindicator3-1)
have_pkg libayatana-appindicator3-dev || missing+=(libayatana-appindicator3-dev)
have_cmd WebKitWebDriver || missing+=(webkit2gtk-driver)
have_cmd xvfb-run || missing+=(xvfb)
have_cmd xauth || missing+=(xauth)
have_cmd rsvg-convert || missing+=(librsvg2-bin)
have_cmd xdotool || missing+=(xdotool)
# The desktop tests measure layouts in these fonts only (tests/desktop/fonts.conf).
have_pkg fonts-dejavu-core || missing+=(fonts-dejavu-core)
# `script` gives the import test a terminal.
have_cmd script || missing+=(bsdutils)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if ! have_cmd apt-get; then
  log "missing: ${missing[*]} — install them with your package manager (this script knows apt only)."
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
log "installing: ${missing[*]}"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
