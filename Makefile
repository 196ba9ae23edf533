# Gatehouse: `make run` builds and opens the desktop app, `make test` runs the whole suite. Both
# install what is missing (system packages, test peers, tauri-driver) first and are safe to run again.

SHELL := /bin/bash
PEERS_DIR ?= $(HOME)/.cache/gatehouse-peers
export GATEHOUSE_PEERS_DIR := $(PEERS_DIR)
DEMO_DIR ?= /tmp/gatehouse-demo
# The user's config (what the app and `gatehouse serve` read by default).
USER_CONFIG := $(shell printf '%s' "$${XDG_CONFIG_HOME:-$$HOME/.config}")/gatehouse/gatehouse.json
# The desktop tests and bench need a display: a private Xvfb server, and only the fonts the
# install step brings (tests/desktop/fonts.conf), so a layout measures the same on every machine.
XVFB := env FONTCONFIG_FILE=$(CURDIR)/tests/desktop/fonts.conf xvfb-run -a -s "-screen 0 1280x800x24"
# The suite never asks the public package indexes: pinning (add, import, the app's form) and the
# integrity check at a start go to a closed local port unless a test points them at its own
# stand-in (tests/clients/registry_server.py). Servers' own runners (npx, uvx) are unaffected:
# a server never inherits these variables.
HERMETIC := npm_config_registry=http://127.0.0.1:9 GATEHOUSE_PYPI_URL=http://127.0.0.1:9

.PHONY: run serve test deps peers build lint bench deb fuzz screenshots

deps:
	@scripts/install-deps.sh

peers: deps
	@scripts/install-peers.sh >/dev/null

build: deps
	cargo build --release --bins
	cargo build --release -p gatehouse-app

# The desktop app on your config; the first run seeds it from examples/gatehouse.json.
run: peers build
	@mkdir -p $(DEMO_DIR)
	@if [ ! -f "$(USER_CONFIG)" ]; then \
	  mkdir -p "$$(dirname "$(USER_CONFIG)")" && cp examples/gatehouse.json "$(USER_CONFIG)" && \
	  echo "created $(USER_CONFIG) from examples/gatehouse.json"; fi
	target/release/gatehouse-app

# The headless hub on a copy of the example config (the hub keeps a .bak next to its config).
serve: peers build
	@mkdir -p $(DEMO_DIR)
	@cp examples/gatehouse.json $(DEMO_DIR)/gatehouse.json
	target/release/gatehouse serve --config $(DEMO_DIR)/gatehouse.json

# A .deb with the Tauri bundler (cargo-tauri from crates.io; nothing else is downloaded).
deb: deps
	@command -v cargo-tauri >/dev/null || cargo install tauri-cli --version '^2' --locked
	cargo build --release --bins
	cd src-tauri && cargo tauri build --bundles deb
	@ls -1 target/release/bundle/deb/*.deb

lint: peers
	$(PEERS_DIR)/lint/node_modules/.bin/eslint --config eslint.config.mjs ui/
	cargo fmt --all --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy -p gatehouse-app --all-targets -- -D warnings
	PEERS_DIR=$(PEERS_DIR) scripts/audit.sh

# The whole suite in a private D-Bus session with a fresh gnome-keyring (keychain tests); the
# desktop e2e tests also get a private Xvfb display. The app is built once, by the first cargo test.
# The load run (60 s, a hostile client profile against 24 clients of another) runs alone after the
# rest, so neither disturbs the other, and prints its figures.
test: peers lint
	cargo build --bins
	$(HERMETIC) scripts/with-keyring.sh cargo test -- --include-ignored --skip load::a_hostile_profile
	$(HERMETIC) scripts/with-keyring.sh cargo test --test it -- --include-ignored --nocapture load::a_hostile_profile
	$(HERMETIC) scripts/with-keyring.sh $(XVFB) cargo test -p gatehouse-app -- --include-ignored --test-threads=1

# Each fuzz target for FUZZ_SECS seconds (cargo-fuzz, which needs a nightly toolchain); new
# inputs go to fuzz/corpus, crashes to fuzz/artifacts (turn each into a regression test).
# Not part of `make test`.
FUZZ_SECS ?= 60
FUZZ_TARGETS := envelope line_codec host_guard config
fuzz:
	@rustup toolchain list | grep -q nightly || { echo "make fuzz needs a nightly toolchain (rustup toolchain install nightly)"; exit 1; }
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cd fuzz && for t in $(FUZZ_TARGETS); do \
		mkdir -p corpus/$$t && \
		cargo +nightly fuzz run $$t corpus/$$t seeds/$$t -- -max_total_time=$(FUZZ_SECS) -max_len=65536 || exit 1; \
	done

# The README's screenshots, light and dark, from the last desktop e2e run (`make test`).
SHOTS := servers-expanded server-form approval approval-queue activity permissions secrets connect-profile import settings
screenshots:
	@for s in $(SHOTS); do for f in $$s $$s-dark; do \
		test -f target/e2e-shots/$$f.png || { echo "target/e2e-shots/$$f.png is missing: run make test first"; exit 1; }; \
		cp target/e2e-shots/$$f.png docs/$$f.png; \
	done; done
	@test -f target/e2e-shots/approval-prompt.png || { echo "target/e2e-shots/approval-prompt.png is missing: run make test first"; exit 1; }
	@cp target/e2e-shots/approval-prompt.png docs/approval-prompt.png
	@echo "docs/: $(words $(SHOTS)) views, light and dark, and the native approval prompt"

bench: peers
	cargo bench --bench supervisor
	cargo bench --bench gateway
	cargo bench --bench approvals
	cargo build --release --bins
	scripts/with-keyring.sh $(XVFB) cargo bench -p gatehouse-app --bench desktop
