# Gatehouse: `make run` starts it, `make test` runs the whole suite. Both install what is missing
# (system packages, test peers) first and are safe to run again.

SHELL := /bin/bash
PEERS_DIR ?= $(HOME)/.cache/gatehouse-peers
export GATEHOUSE_PEERS_DIR := $(PEERS_DIR)
DEMO_DIR ?= /tmp/gatehouse-demo

.PHONY: run test deps peers build lint bench

deps:
	@scripts/install-deps.sh

peers: deps
	@scripts/install-peers.sh >/dev/null

build: deps
	cargo build --release --bin gatehouse

# Until the desktop app lands: the headless hub on the example config.
run: peers build
	@mkdir -p $(DEMO_DIR)
	cargo run --release --quiet --bin gatehouse -- serve --config examples/gatehouse.json

lint:
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings

# The whole suite runs in a private D-Bus session with a fresh gnome-keyring (keychain tests).
test: peers lint
	scripts/with-keyring.sh cargo test -- --include-ignored

bench: peers
	cargo bench --bench supervisor
	cargo bench --bench gateway
	cargo bench --bench approvals
