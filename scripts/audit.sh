#!/usr/bin/env bash
# Dependency advisories, run by `make lint`: the crates through cargo-deny (`deny.toml`), the
# UI's tooling packages (ESLint's tree in the peers folder) through `npm audit`. Offline-tolerant:
# an advisory database or endpoint that cannot be reached, or cargo-deny not installed, is a
# warning that says so; a known advisory (npm: high or critical) is a failure.
set -u
PEERS_DIR=${PEERS_DIR:-$HOME/.cache/gatehouse-peers}
failed=0
warn() { echo "audit: warning: $*" >&2; }

if command -v cargo-deny >/dev/null 2>&1; then
  out=$(timeout 300 cargo deny check advisories 2>&1)
  rc=$?
  if [ $rc -eq 0 ]; then
    echo "audit: crates: no known advisories"
  elif printf '%s' "$out" | grep -q 'error\[\(vulnerability\|unmaintained\|unsound\|notice\)\]'; then
    printf '%s\n' "$out" >&2
    echo "audit: crates: advisories above" >&2
    failed=1
  else
    warn "crates not checked: the advisory database could not be fetched or read ($(printf '%s' "$out" | tail -n 1))"
  fi
else
  warn "crates not checked: cargo-deny is not installed (\`cargo install --locked cargo-deny\`; its database is fetched from github.com)"
fi

if [ -d "$PEERS_DIR/lint" ]; then
  out=$(cd "$PEERS_DIR/lint" && timeout 120 npm audit --json --audit-level=high 2>/dev/null)
  counts=$(printf '%s' "$out" | python3 -c '
import json, sys
try:
    meta = json.load(sys.stdin)["metadata"]["vulnerabilities"]
except Exception:
    sys.exit(3)
print(meta.get("high", 0) + meta.get("critical", 0))' 2>/dev/null)
  case $? in
    0) if [ "$counts" -gt 0 ]; then
         (cd "$PEERS_DIR/lint" && npm audit --audit-level=high) >&2
         failed=1
       else
         echo "audit: UI tooling (npm): no high or critical advisories"
       fi ;;
    *) warn "UI tooling not checked: the npm audit endpoint did not answer" ;;
  esac
fi
exit $failed
