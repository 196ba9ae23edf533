//! A probe runs what Save would run: a runner entry's package pinned as a new entry is (past the
//! cool-down; a version the command names kept), its artifact installed into the person's store
//! when it is not there yet (so the Save that follows a Test downloads nothing more), and run
//! from there — never what `npx` or `uvx` would fetch unpinned.

use crate::config::{Pin, ServerConfig, Transport};
use crate::registry::pin::{self, spec};
use crate::registry::store::Store;

/// Where a probe's pinned packages come from: the store Save installs into, and the cool-down
/// a new entry is pinned under.
#[derive(Debug, Clone)]
pub struct FromStore {
    /// The store Save installs into (the running hub's, else the data directory's).
    pub store: Store,
    /// The cool-down a new entry is pinned under (`registry.min_age_days`).
    pub min_age_days: u64,
}

/// Makes `server` run from `from`'s store: pinned when it is not (the sentence says to what),
/// installed when missing. `Ok(None)`: it runs no package from an index. An index that cannot
/// be reached leaves an unpinned entry as written (the note says so); a pinned one whose
/// artifact cannot be installed is an error (it would not start).
pub async fn ready(
    server: &mut ServerConfig,
    from: &FromStore,
) -> Result<Option<(String, Option<String>)>, String> {
    let Transport::Stdio(t) = &mut server.transport else {
        return Ok(None);
    };
    if pin::not_a_package(&t.command, &t.args).is_some() {
        return Ok(None);
    }
    let Some(first) = spec(&t.command, &t.args) else {
        return Ok(None);
    };
    let mut note = None;
    if t.pin.is_none() {
        let release = match &first.version {
            Some(v) => crate::registry::index::releases(first.index, &first.name)
                .await
                .map(|r| r.get(v).cloned()),
            None => pin::look(&first, from.min_age_days)
                .await
                .map(|l| Some(l.take.unwrap_or(l.newest))),
        };
        match release {
            Ok(Some(r)) => {
                if let Some(a) = t.args.get_mut(first.at) {
                    *a = first.pinned(&r.version);
                }
                t.pin = Some(Pin {
                    version: r.version.clone(),
                    integrity: r.integrity.clone(),
                });
                note = Some(format!(
                    "tested {} — the version saving it pins",
                    first.pinned(&r.version)
                ));
            }
            Ok(None) | Err(_) => {
                let why = match release {
                    Err(e) => e,
                    _ => "the index does not list that version".into(),
                };
                return Ok(Some((
                    first.name.clone(),
                    Some(format!(
                        "not pinned ({why}): it ran as written, whatever its runner fetched"
                    )),
                )));
            }
        }
    }
    let (Some(p), Some(s)) = (t.pin.clone(), spec(&t.command, &t.args)) else {
        return Ok(None);
    };
    if s.version.as_deref() != Some(p.version.as_str()) {
        return Ok(None);
    }
    if from.store.installed(&s, &p).is_err() {
        crate::hub::artifacts::install(&from.store, &s, &p, from.min_age_days)
            .await
            .map_err(|e| {
                format!(
                    "its pinned artifact {} could not be installed: {e}",
                    s.pinned(&p.version)
                )
            })?;
    }
    Ok(Some((s.pinned(&p.version), note)))
}
