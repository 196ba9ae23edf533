//! `client-files`: the changes to the AI clients' files made outside Gatehouse — listed (with
//! each diff), put back (`restore PATH`) or kept (`ack PATH`) — and the lines `status` prints
//! under its table while any is open.

use std::path::PathBuf;

use gatehouse::control::{ControlClient, Request};
use gatehouse::watch::ClientFileAlert;

use crate::args::ClientFilesCmd;
use crate::ask::ask;
use crate::print;

/// `client-files [--json]`, `client-files restore PATH`, `client-files ack PATH`.
pub async fn run(
    client: &ControlClient,
    cmd: Option<ClientFilesCmd>,
    json: bool,
) -> Result<(), String> {
    match cmd {
        None => {
            let alerts: Vec<ClientFileAlert> = ask(client, Request::ClientFiles).await?;
            if json {
                print::json(&serde_json::json!({ "client_files": alerts }));
            } else if alerts.is_empty() {
                say!("no client file changed outside Gatehouse");
            } else {
                for a in &alerts {
                    detail(a);
                }
            }
            Ok(())
        }
        Some(ClientFilesCmd::Restore { path }) => {
            let said: String = ask(
                client,
                Request::RestoreClientFile {
                    path: absolute(path),
                },
            )
            .await?;
            say!("{said}");
            Ok(())
        }
        Some(ClientFilesCmd::Ack { path }) => {
            let path = absolute(path);
            ask::<()>(client, Request::AckClientFile { path: path.clone() }).await?;
            say!(
                "kept the change to {}; it is what Gatehouse compares with from now on",
                path.display()
            );
            Ok(())
        }
    }
}

/// A path as the alerts name it: absolute.
fn absolute(path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        return path;
    }
    std::env::current_dir()
        .map(|d| d.join(&path))
        .unwrap_or(path)
}

/// One alert whole: what changed, who owns the file when not the person, the diff, the two
/// actions.
fn detail(a: &ClientFileAlert) {
    say!("{} ({}): {}", a.path, a.client, a.what.join(", "));
    if let Some(by) = &a.by {
        say!("  {by}");
    }
    say!(
        "  seen {}",
        gatehouse::logs::Utc::from_secs(a.seen_ms / 1000).rfc3339()
    );
    for line in a.diff.lines() {
        say!("  {line}");
    }
    if a.restorable {
        say!("  put it back: gatehouse client-files restore {}", a.path);
    }
    say!("  keep it: gatehouse client-files ack {}", a.path);
}

/// The lines `status` prints under its table: one per changed file and how to see more.
pub fn summary(alerts: &[ClientFileAlert]) {
    if alerts.is_empty() {
        return;
    }
    say!();
    say!(
        "⚠ {} client file(s) changed outside Gatehouse — see `gatehouse client-files`:",
        alerts.len()
    );
    for a in alerts {
        say!("  {} ({}): {}", a.path, a.client, a.what.join(", "));
    }
}
