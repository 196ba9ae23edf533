#!/usr/bin/env bash
# Runs a command inside a private D-Bus session with a fresh, unlocked gnome-keyring (PEERS.md):
# the keychain tests use the real Secret Service without touching the user's own keyring.
set -euo pipefail
export XDG_DATA_HOME="$(mktemp -d)"
trap 'rm -rf "$XDG_DATA_HOME"' EXIT
export GATEHOUSE_TEST_KEYCHAIN=1
dbus-run-session -- bash -c 'printf %s "ci-pass" | gnome-keyring-daemon --unlock --components=secrets >/dev/null; exec "$@"' _ "$@"
