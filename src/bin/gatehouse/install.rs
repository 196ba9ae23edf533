//! The CLI's side of Gatehouse's store: which store counts (the running hub's, else the data
//! directory a hub would use) and installing a pinned artifact into it when it is missing —
//! shared by `add` and `pin`, below both.

use gatehouse::config::Pin;
use gatehouse::control::{ControlClient, Request};
use gatehouse::registry::pin::{self, Spec};
use gatehouse::registry::store::Store;

/// The package a pinned runner entry runs, with its pin.
pub fn pinned_package(entry: &serde_json::Value) -> Option<(Spec, Pin)> {
    let command = entry.get("command")?.as_str()?.to_owned();
    let args: Vec<String> = entry
        .get("args")
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let p: Pin = serde_json::from_value(entry.get("pin")?.clone()).ok()?;
    let spec = pin::spec(&command, &args)?;
    (spec.version.as_deref() == Some(p.version.as_str())).then_some((spec, p))
}

/// The store that counts: the running hub's, else the default data directory's (the one a
/// hub started without `--data-dir` uses: `$XDG_DATA_HOME/gatehouse`, `~/.local/share/gatehouse`).
pub async fn store(client: &ControlClient) -> Store {
    match client
        .request::<Option<std::path::PathBuf>>(&Request::StorePath)
        .await
    {
        Ok(Some(root)) => Store::at_root(root),
        _ => Store::at(&gatehouse::config::default_data_dir()),
    }
}

/// The artifact of `spec` at `p` installed into `store` when it is not there yet; said either way.
pub async fn ensure_installed(
    store: &Store,
    spec: &Spec,
    p: &Pin,
    min_age: u64,
) -> Result<(), String> {
    if let Ok(a) = store.installed(spec, p) {
        say!(
            "its artifact is in the store ({}): {}",
            packages(a.packages, a.locked),
            a.store.display()
        );
        return Ok(());
    }
    say!(
        "installing {} into Gatehouse's store…",
        spec.pinned(&p.version)
    );
    let a = gatehouse::hub::artifacts::install(store, spec, p, min_age).await?;
    say!(
        "installed: {}, checked against the pin: {}",
        packages(a.packages, a.locked),
        a.store.display()
    );
    Ok(())
}

/// "3 packages, each locked with its integrity".
fn packages(n: usize, locked: bool) -> String {
    format!(
        "{n} package{}, {}",
        if n == 1 { "" } else { "s" },
        if locked {
            "each locked with its integrity"
        } else {
            "not every package locked"
        }
    )
}
