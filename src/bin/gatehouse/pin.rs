//! `gatehouse pin ID [--update [--yes] [--now]]`: an unpinned package pinned; a pinned one
//! compared with the index (a newer release shown — with its age while it waits out the
//! cool-down); its artifact installed into Gatehouse's store when it is not there yet. With
//! `--update`, the new version's whole tree is resolved first and every package that would
//! change is shown (name, old → new, its age) before anything is written; `--yes` takes it.

use gatehouse::config::{Config, Pin};
use gatehouse::control::ControlClient;
use gatehouse::registry::index::Release;
use gatehouse::registry::pin::Look;
use gatehouse::registry::pin::{self, Spec};
use gatehouse::registry::store::{cooldown_before, Change, Store};

use crate::install::{ensure_installed, store};
use crate::manage::config_path;

/// `gatehouse pin`.
pub async fn pin(
    client: &ControlClient,
    id: &str,
    (update, yes, now): (bool, bool, bool),
    config: Option<std::path::PathBuf>,
) -> Result<(), String> {
    let path = config_path(client, config.as_deref()).await;
    let cfg = Config::load(&path).map_err(|e| e.to_string())?;
    let min_age = cfg.registry.min_age_days();
    let server = cfg
        .servers
        .iter()
        .find(|(k, _)| k.as_str() == id)
        .map(|(_, v)| v.clone())
        .ok_or_else(|| format!("unknown server \"{id}\""))?;
    let mut entry = serde_json::to_value(&server).map_err(|e| e.to_string())?;
    let (command, args) = crate::manage::command_and_args(&entry);
    if let Some(problem) = pin::not_a_package(&command, &args) {
        return Err(format!("{id}: {problem}"));
    }
    let Some(spec) = pin::spec(&command, &args) else {
        return Err(format!(
            "{id} runs no npx or uvx package: there is no version to pin"
        ));
    };
    let current: Option<Pin> = serde_json::from_value(entry["pin"].clone()).ok();
    let look = pin::look(&spec, min_age).await?;
    let stamp = gatehouse::logs::now_ms();
    let newest = &look.newest;
    let waiting = || pin::cooldown_line(newest, min_age, stamp);
    let store = store(client).await;
    let to = match (&spec.version, update) {
        (None, _) => look.take.clone().unwrap_or_else(|| newest.clone()),
        (Some(v), false) => {
            report(id, &spec, v, &look, min_age);
            return match current {
                Some(p) if p.version == *v => ensure_installed(&store, &spec, &p, min_age).await,
                _ => Ok(()),
            };
        }
        (Some(v), true) => {
            let target = if now {
                Some(newest.clone())
            } else {
                look.take.clone()
            };
            match target.filter(|t| pin::is_newer(&t.version, v)) {
                Some(t) => t,
                None if pin::is_newer(&newest.version, v) => {
                    say!("{id} stays at {v}: {}", waiting());
                    return Ok(());
                }
                None => {
                    say!("{id} is already at {v}, the newest version");
                    return Ok(());
                }
            }
        }
    };
    let from = spec.version.clone().unwrap_or_else(|| "unpinned".into());
    let next = Pin {
        version: to.version.clone(),
        integrity: to.integrity.clone(),
    };
    if update && spec.version.is_some() {
        show_changes(&store, &spec, current.as_ref(), &next, min_age).await?;
        if !yes {
            say!("nothing was written: `gatehouse pin {id} --update --yes` takes it");
            return Ok(());
        }
    }
    pin::apply(&mut entry, &spec, &to);
    crate::manage::apply(
        client,
        crate::manage::Edit::Replace {
            id: id.to_owned(),
            entry,
        },
        config,
    )
    .await?;
    say!("{id}: {} {from} → {}", spec.name, to.version);
    said_recorded(&to);
    if spec.version.is_some() {
        say!("at its next start, any tool whose definition changed asks again before it runs");
    }
    // A hub installs what it saves; without one, it is installed here.
    let pinned = Spec {
        version: Some(next.version.clone()),
        ..spec
    };
    ensure_installed(&store, &pinned, &next, min_age).await
}

/// What `pin ID` says of a pinned entry: the newest version, or an update past the cool-down
/// (and one waiting it out).
fn report(id: &str, spec: &Spec, v: &str, look: &Look, min_age: u64) {
    let newest = &look.newest;
    let waiting = || pin::cooldown_line(newest, min_age, gatehouse::logs::now_ms());
    let current_line = format!("{id} is pinned to {}", spec.pinned(v));
    match &look.take {
        _ if !pin::is_newer(&newest.version, v) => {
            say!("{current_line}, the newest version");
        }
        Some(t) if pin::is_newer(&t.version, v) => {
            say!(
                "{current_line}; update available: {} — `gatehouse pin {id} --update` shows what it changes",
                t.version
            );
            if t.version != newest.version {
                say!("{}", waiting());
            }
        }
        _ => say!("{current_line}; {}", waiting()),
    }
}

fn said_recorded(to: &Release) {
    if let Some(i) = &to.integrity {
        say!("its artifact's integrity is recorded ({i}): a start runs only that artifact, from Gatehouse's store");
    }
}

/// Every package of the tree that moving from `from` to `to` would change, with the new
/// version's age, resolved in a scratch folder of the store before anything is written.
async fn show_changes(
    store: &Store,
    spec: &Spec,
    from: Option<&Pin>,
    to: &Pin,
    min_age: u64,
) -> Result<(), String> {
    let before = cooldown_before(spec, &to.version, min_age).await?;
    let (s, sp, f, t) = (store.clone(), spec.clone(), from.cloned(), to.clone());
    let changes: Vec<Change> = tokio::task::spawn_blocking(move || {
        let from = f.unwrap_or_else(|| Pin {
            version: String::new(),
            integrity: None,
        });
        s.changes(&sp, &from, &t, before)
    })
    .await
    .map_err(|e| e.to_string())??;
    say!(
        "{} package{} would change:",
        changes.len(),
        if changes.len() == 1 { "" } else { "s" }
    );
    let now = gatehouse::logs::now_ms();
    for c in &changes {
        let age = match &c.to {
            Some(v) => age_of(spec.index, &c.name, v, now).await,
            None => String::new(),
        };
        say!(
            "  {}: {} → {}{age}",
            gatehouse::text::reveal(&c.name),
            c.from.as_deref().unwrap_or("(new)"),
            c.to.as_deref().unwrap_or("(gone)")
        );
    }
    Ok(())
}

/// ", 12 days old" for a package version the index dates.
async fn age_of(index: pin::Index, name: &str, version: &str, now: u64) -> String {
    let Ok(r) = gatehouse::registry::index::releases(index, name).await else {
        return String::new();
    };
    r.get(version)
        .and_then(|r| pin::age_days(r, now))
        .map(|d| format!(", {d} day{} old", if d == 1 { "" } else { "s" }))
        .unwrap_or_default()
}
