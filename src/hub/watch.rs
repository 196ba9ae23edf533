//! The hub's part of the watch on the clients' files (`crate::watch`): the thread that looks
//! every second and publishes what it finds, the open alerts (Gatehouse's own tokens masked in
//! their diffs), restore and acknowledge, and the one way a front end writes Gatehouse's entry
//! into a client's file — told to the watch byte for byte before it goes in place, so it never
//! alerts.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::clients::{ClientKind, Written};
use crate::events::{Event, EventBus};
use crate::secrets::Redactions;
use crate::watch::{ClientFileAlert, Watch};

/// Starts the thread that runs the watch until it is stopped or the hub is gone: the first
/// look at once (what changed while Gatehouse was not running), then every
/// [`crate::watch::PERIOD`].
pub(super) fn start(watch: &Arc<Watch>, bus: EventBus, redactions: Arc<Redactions>) {
    let weak = Arc::downgrade(watch);
    let spawned = std::thread::Builder::new()
        .name("client-files".into())
        .spawn(move || loop {
            let Some(watch) = weak.upgrade().filter(|w| !w.stopped()) else {
                return;
            };
            for alert in watch.scan() {
                let alert = masked(&redactions, alert);
                // A file's names are the file's text: shown, never obeyed, in the log.
                tracing::warn!(
                    "client files: {} changed outside Gatehouse ({})",
                    crate::text::reveal(&alert.path),
                    crate::text::reveal(&alert.what.join(", "))
                );
                bus.publish(Event::ClientFileChanged(alert));
            }
            drop(watch);
            std::thread::sleep(crate::watch::PERIOD);
        });
    if let Err(e) = spawned {
        tracing::error!("client files: the watch could not start: {e}");
    }
}

fn watching(watch: Option<&Arc<Watch>>) -> Result<&Arc<Watch>, String> {
    watch.ok_or_else(|| "this Gatehouse does not watch the clients' files".to_owned())
}

/// An alert as it may be shown: Gatehouse's own tokens masked in its diff.
fn masked(redactions: &Redactions, mut alert: ClientFileAlert) -> ClientFileAlert {
    alert.diff = redactions.mask(&alert.diff);
    alert
}

/// The open alerts.
pub(super) fn alerts(watch: Option<&Arc<Watch>>, redactions: &Redactions) -> Vec<ClientFileAlert> {
    watch
        .map(|w| w.alerts())
        .unwrap_or_default()
        .into_iter()
        .map(|a| masked(redactions, a))
        .collect()
}

/// Puts back what the file held before the change; said on the bus.
pub(super) fn restore(
    watch: Option<&Arc<Watch>>,
    bus: &EventBus,
    path: &Path,
) -> Result<String, String> {
    let said = watching(watch)?.restore(path)?;
    bus.publish(Event::ClientFileSettled {
        path: path.display().to_string(),
        restored: true,
    });
    Ok(said)
}

/// Keeps the change; said on the bus.
pub(super) fn ack(watch: Option<&Arc<Watch>>, bus: &EventBus, path: &Path) -> Result<(), String> {
    watching(watch)?.ack(path)?;
    bus.publish(Event::ClientFileSettled {
        path: path.display().to_string(),
        restored: false,
    });
    Ok(())
}

/// Writes Gatehouse's entry into a client's file (`crate::clients::write_entry`), the bytes
/// told to the watch before they go in place.
pub(super) fn write_entry(
    watch: Option<&Arc<Watch>>,
    path: &Path,
    kind: ClientKind,
    entry: &Value,
    managed: &[String],
) -> Result<Written, String> {
    let note = watch.cloned().map(|w| {
        Arc::new(move |p: &Path, bytes: &[u8], scrub: &[String]| {
            w.expect(p, bytes);
            w.scrub(p, scrub);
        }) as crate::client_file::edit::Note
    });
    crate::clients::write_entry_noting(path, kind, entry, managed, note)
}
