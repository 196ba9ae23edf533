//! An npm package installed into the store by npm itself, as Gatehouse directs it: from the
//! index Gatehouse checked the pin against (`--registry`, whatever `~/.npmrc` or the entry's
//! environment say), with a cache of the store's own (never the person's `~/.npm`, which other
//! programs write), no install scripts, no dev dependencies, the tree resolved as it was at the
//! cool-down's date (`--before`); then checked: the package's version and its integrity in the
//! lock are the pin's, and every package in the lock has an integrity.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{rfc3339, run, tool, Artifact};
use crate::registry::pin::Spec;

/// Installs `spec` at `version` into `staging` (blocking).
pub(super) fn install(
    root: &Path,
    staging: &Path,
    spec: &Spec,
    version: &str,
    integrity: &str,
    before_ms: Option<u64>,
) -> Result<Artifact, String> {
    let npm = tool("npm", "npx").ok_or_else(|| {
        "cannot install it: npm is not on PATH (Node.js installs it beside npx)".to_owned()
    })?;
    let manifest = serde_json::json!({
        "name": "gatehouse-artifact",
        "version": "0.0.0",
        "private": true,
        "dependencies": { &spec.name: version },
    });
    std::fs::write(staging.join("package.json"), manifest.to_string())
        .map_err(|e| format!("cannot write the artifact's manifest: {e}"))?;
    // No config of the person's or the machine's: what is fetched, from where, is Gatehouse's
    // to say (an `.npmrc` can name another registry, or turn scripts back on). npm wants its
    // user and global files to be two files, and neither in the project folder.
    let (user, global) = (root.join("npmrc-user"), root.join("npmrc-global"));
    for f in [&user, &global] {
        std::fs::write(f, "").map_err(|e| format!("cannot write {}: {e}", f.display()))?;
    }
    let registry = crate::registry::index::base(crate::registry::pin::Index::Npm);
    let mut cmd = std::process::Command::new(npm);
    cmd.current_dir(staging)
        .env("npm_config_userconfig", &user)
        .env("npm_config_globalconfig", &global)
        .env_remove("npm_config_registry")
        .env_remove("NPM_CONFIG_REGISTRY")
        .args(["install", "--ignore-scripts", "--no-audit", "--no-fund"])
        .args(["--omit=dev", "--no-update-notifier", "--loglevel=error"])
        .arg(format!("--registry={registry}/"))
        .arg(format!("--cache={}", root.join("npm-cache").display()));
    if let Some(ms) = before_ms {
        cmd.arg(format!("--before={}", rfc3339(ms)));
    }
    run(cmd, "npm install")?;
    crate::private::repair_tree(staging);
    check(staging, spec, version, integrity)
}

/// The installed tree checked against the pin: the package at `version`, its lock entry's
/// integrity `integrity`; its program found.
fn check(staging: &Path, spec: &Spec, version: &str, integrity: &str) -> Result<Artifact, String> {
    let pinned = spec.pinned(version);
    let pkg_dir = staging.join("node_modules").join(&spec.name);
    let manifest = read_json(&pkg_dir.join("package.json"))
        .ok_or_else(|| format!("npm installed no {pinned}"))?;
    if manifest["version"].as_str() != Some(version) {
        return Err(format!(
            "the index served {} {} for {pinned}: refused",
            spec.name,
            crate::text::reveal(manifest["version"].as_str().unwrap_or("without a version"))
        ));
    }
    let lock = read_json(&staging.join("package-lock.json"))
        .ok_or_else(|| format!("npm wrote no lock for {pinned}"))?;
    let packages = lock["packages"].as_object().cloned().unwrap_or_default();
    let key = format!("node_modules/{}", spec.name);
    let got = packages
        .get(&key)
        .and_then(|p| p["integrity"].as_str())
        .unwrap_or("none");
    if got != integrity {
        return Err(format!(
            "the index served another artifact for {pinned} than the one pinned — integrity {integrity} pinned, {} served: refused (look at it with `gatehouse pin ID`, and pin it again only if you trust the change)",
            crate::text::reveal(got)
        ));
    }
    let tree: Vec<&Value> = packages
        .iter()
        .filter(|(k, _)| k.starts_with("node_modules/"))
        .map(|(_, v)| v)
        .collect();
    let locked = tree
        .iter()
        .all(|p| p["link"] == true || p["integrity"].as_str().is_some_and(|i| !i.is_empty()));
    let program = program(&pkg_dir, &manifest, spec)?;
    Ok(Artifact {
        store: staging.to_owned(),
        program,
        index: "npm".into(),
        name: spec.name.clone(),
        version: version.to_owned(),
        integrity: integrity.to_owned(),
        packages: tree.len(),
        locked,
        installed_ms: 0,
    })
}

/// The program npx would run for the package: its only `bin`, or the one named as the package
/// (without its scope); linked in `node_modules/.bin` by npm.
fn program(pkg_dir: &Path, manifest: &Value, spec: &Spec) -> Result<PathBuf, String> {
    let unscoped = spec.name.rsplit('/').next().unwrap_or(&spec.name);
    let bin = match &manifest["bin"] {
        Value::String(path) => Some((unscoped.to_owned(), path.clone())),
        Value::Object(map) => map
            .get(unscoped)
            .map(|p| {
                (
                    unscoped.to_owned(),
                    p.as_str().unwrap_or_default().to_owned(),
                )
            })
            .or_else(|| {
                (map.len() == 1)
                    .then(|| map.iter().next())
                    .flatten()
                    .map(|(k, p)| (k.clone(), p.as_str().unwrap_or_default().to_owned()))
            }),
        _ => None,
    };
    let Some((name, path)) = bin else {
        return Err(format!(
            "{} names no single program to run (its package.json \"bin\"), as npx would need",
            spec.name
        ));
    };
    let file = pkg_dir.join(&path);
    let file = std::fs::canonicalize(&file).map_err(|_| {
        format!(
            "{} names the program {} ({}), which it does not hold",
            spec.name,
            crate::text::reveal(&name),
            crate::text::reveal(&path)
        )
    })?;
    if !file.starts_with(pkg_dir.canonicalize().unwrap_or_default()) {
        return Err(format!("{}'s program lies outside the package", spec.name));
    }
    let linked = pkg_dir
        .ancestors()
        .find(|a| a.ends_with("node_modules"))
        .map(|m| m.join(".bin").join(&name))
        .filter(|l| l.exists());
    Ok(linked.unwrap_or(file))
}

/// The packages of an installed tree and their versions (its lock).
pub(super) fn tree(dir: &Path) -> Vec<(String, String)> {
    let lock = read_json(&dir.join("package-lock.json")).unwrap_or_default();
    let mut out: Vec<(String, String)> = lock["packages"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| {
                    let name = k.rsplit_once("node_modules/")?.1.to_owned();
                    Some((name, v["version"].as_str()?.to_owned()))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out.dedup();
    out
}

fn read_json(p: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(p).ok()?).ok()
}
