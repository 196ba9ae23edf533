//! End-to-end tests of the desktop app: the real `gatehouse-app` in a real WebKitGTK window under
//! Xvfb, driven by tauri-driver; real fixture servers, a real MCP client (Python SDK) through the
//! gateway, the real keychain (gnome-keyring in the test's D-Bus session). `make test` runs them:
//! `scripts/with-keyring.sh xvfb-run -a cargo test -p gatehouse-app --test e2e -- --include-ignored`.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// tests, benches and the fixture may panic
// Tests, benches and the fixture read top to bottom as the story they check or measure: the
// 100-line limit is for the product's own functions.
#![allow(clippy::too_many_lines)]

mod approvals;
mod client_files;
mod clients;
mod layout;
mod notices;
mod pins;
mod registry;
mod rules;
mod seen;
mod servers;
mod support;
mod tray;
mod window;
mod xproc;

use serde_json::{json, Value};
use support::*;

async fn lock() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.lock().await
}

fn is_error(out: &Value, tool: &str) -> bool {
    out["results"][tool]["isError"] == json!(true)
}

fn text_of(out: &Value, tool: &str) -> String {
    out["results"][tool]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
