//! Versions pinned: a package a runner fetches (`npx pkg`, `uvx pkg`) runs the exact version
//! recorded in its entry, never whatever the package index serves today. Finds the package in a
//! command line (its name checked by the ecosystem's grammar), asks the index ([`super::index`])
//! and takes the newest release at least the cool-down old (`registry.min_age_days`), rewrites
//! the argument to `pkg@1.4.2` / `pkg==1.4.2` and records `"pin": {version, integrity}`; what is
//! pinned is installed, checked and run from Gatehouse's store (`registry::store`).

pub use super::index::Index;
use super::index::{Release, Releases};

/// The package argument of a runner's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// Where it comes from.
    pub index: Index,
    /// Its position in the arguments.
    pub at: usize,
    /// The package's name.
    pub name: String,
    /// The version it is pinned to, if it is.
    pub version: Option<String>,
}

impl Spec {
    /// The argument pinned to `version`.
    pub fn pinned(&self, version: &str) -> String {
        match self.index {
            Index::Npm => format!("{}@{version}", self.name),
            Index::Pypi => format!("{}=={version}", self.name),
        }
    }
}

/// Flags of the runners that take a value (skipped with it when looking for the package).
const VALUED: &[&str] = &[
    "-p",
    "--package",
    "--from",
    "--with",
    "--python",
    "-c",
    "--call",
];

/// The package a runner command line fetches, when it is one (`npx -y pkg …`, `uvx pkg …`).
pub fn spec(command: &str, args: &[String]) -> Option<Spec> {
    let base = std::path::Path::new(command)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(command);
    let index = match base {
        "npx" | "pnpx" | "bunx" => Index::Npm,
        "uvx" => Index::Pypi,
        _ => return None,
    };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if VALUED.contains(&a.as_str()) {
            i += 2;
            continue;
        }
        if a.starts_with('-') {
            i += 1;
            continue;
        }
        let (name, version) = split(index, a);
        return Some(Spec {
            index,
            at: i,
            name,
            version,
        });
    }
    None
}

fn split(index: Index, arg: &str) -> (String, Option<String>) {
    let cut = match index {
        // `@scope/name@1.2.3`: the version's `@` is never the first character.
        Index::Npm => arg[1.min(arg.len())..].find('@').map(|i| (i + 1, i + 2)),
        Index::Pypi => arg
            .find("==")
            .map(|i| (i, i + 2))
            .or_else(|| arg.find('@').map(|i| (i, i + 1))),
    };
    match cut {
        Some((end, start)) => {
            let version = &arg[start..];
            let exact = !version.is_empty()
                && version != "latest"
                && version
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-+_".contains(c));
            (arg[..end].to_owned(), exact.then(|| version.to_owned()))
        }
        None => (arg.to_owned(), None),
    }
}

/// The order of exact versions: their numbers, then a release after its pre-releases.
fn order(v: &str) -> Vec<u64> {
    let (core, pre) = match v.split_once(['-', 'a', 'b', 'r']) {
        Some((c, _)) if !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit() || b == b'.') => {
            (c, true)
        }
        _ => (v, false),
    };
    let core = core.split_once('+').map_or(core, |(c, _)| c);
    let core = core.split_once('!').map_or(core, |(_, c)| c);
    let mut key: Vec<u64> = core
        .split(['.', 'p', 'o', 's', 't', 'd', 'e', 'v'])
        .filter_map(|n| n.parse().ok())
        .collect();
    key.push(u64::from(!pre));
    key
}

/// What pinning a package would take now.
#[derive(Debug, Clone)]
pub struct Look {
    /// The newest release (the index's latest).
    pub newest: Release,
    /// The release to take: the newest one at least the cool-down old (`None`: none is, or the
    /// index dates none).
    pub take: Option<Release>,
    /// Every release.
    pub releases: Releases,
}

/// Days since `r` was published, when the index says.
pub fn age_days(r: &Release, now_ms: u64) -> Option<u64> {
    r.published_ms
        .map(|p| now_ms.saturating_sub(p) / (24 * 3600 * 1000))
}

/// Asks the index about `spec`'s package and chooses, with a cool-down of `min_age_days`: the
/// newest non-pre-release at least that old, never newer than the index's latest.
pub async fn look(spec: &Spec, min_age_days: u64) -> Result<Look, String> {
    let releases = super::index::releases(spec.index, &spec.name).await?;
    Ok(choose(releases, min_age_days, crate::logs::now_ms()))
}

/// [`look`]'s choice over releases the index gave.
pub fn choose(releases: Releases, min_age_days: u64, now_ms: u64) -> Look {
    let newest = releases
        .get(&releases.latest)
        .cloned()
        .unwrap_or_else(|| Release {
            version: releases.latest.clone(),
            published_ms: None,
            integrity: None,
            pre: false,
        });
    let ceiling = order(&newest.version);
    let old_enough =
        |r: &&Release| min_age_days == 0 || age_days(r, now_ms).is_some_and(|d| d >= min_age_days);
    let take = releases
        .all
        .iter()
        .filter(|r| !r.pre && order(&r.version) <= ceiling)
        .filter(old_enough)
        .max_by_key(|r| order(&r.version))
        .cloned();
    Look {
        newest,
        take,
        releases,
    }
}

/// "newer version X is N days old; updates wait M days".
pub fn cooldown_line(newest: &Release, min_age_days: u64, now_ms: u64) -> String {
    let age = age_days(newest, now_ms).map_or_else(
        || "of an unknown age".to_owned(),
        |d| format!("{d} day{} old", if d == 1 { "" } else { "s" }),
    );
    format!(
        "newer version {} is {age}; updates wait {min_age_days} days (`--now` takes it anyway)",
        newest.version
    )
}

/// Whether `newer` is a newer version than `than`.
pub fn is_newer(newer: &str, than: &str) -> bool {
    order(newer) > order(than)
}

/// Writes `r` into `entry`: the command's package argument at its exact version, and `"pin"`
/// with the version and its artifact's integrity.
pub fn apply(entry: &mut serde_json::Value, spec: &Spec, r: &Release) {
    entry["args"][spec.at] = serde_json::Value::String(spec.pinned(&r.version));
    let mut pin = serde_json::json!({"version": r.version});
    if let Some(i) = &r.integrity {
        pin["integrity"] = serde_json::Value::String(i.clone());
    }
    entry["pin"] = pin;
}

/// An entry's program and its arguments (those that are strings).
fn command_line(entry: &serde_json::Value) -> (String, Vec<String>) {
    let command = entry["command"].as_str().unwrap_or_default().to_owned();
    let args = entry["args"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (command, args)
}

/// A new entry's `npx`/`uvx` package pinned (every way of adding does this: the CLI's `add`, the
/// app's form and paste, import): the newest release at least `min_age_days` old — the newest
/// overall when none is, said so; a version the command names already (`npx -y pkg@1.0.0`) is
/// kept and its integrity recorded. `Ok(None)`: it runs no package from an index. The sentence
/// says what was done (and a newer release waiting out the cool-down).
pub async fn pin_new(
    entry: &mut serde_json::Value,
    min_age_days: u64,
) -> Result<Option<String>, String> {
    let (command, args) = command_line(entry);
    if let Some(problem) = not_a_package(&command, &args) {
        return Err(problem);
    }
    let Some(spec) = spec(&command, &args) else {
        return Ok(None);
    };
    if let Some(v) = spec.version.clone() {
        let note = record(entry, min_age_days).await?;
        let said = format!(
            "pinned {} (the version given) with its artifact's integrity",
            spec.pinned(&v)
        );
        return Ok(Some(match note {
            Some(n) => format!("{said}; {n}"),
            None => said,
        }));
    }
    let look = look(&spec, min_age_days).await?;
    let now = crate::logs::now_ms();
    let (take, note) = match &look.take {
        Some(t) => (t.clone(), None),
        None => (
            look.newest.clone(),
            Some(format!(
                "every release of {} is younger than {min_age_days} days: pinned the newest",
                spec.name
            )),
        ),
    };
    apply(entry, &spec, &take);
    let mut said = format!(
        "pinned {} to {} (a newer release is never taken without you: `gatehouse pin ID --update`)",
        spec.name,
        spec.pinned(&take.version)
    );
    if let Some(n) = note {
        said.push_str(&format!("; {n}"));
    } else if is_newer(&look.newest.version, &take.version) {
        said.push_str(&format!(
            "; {}",
            cooldown_line(&look.newest, min_age_days, now)
        ));
    }
    Ok(Some(said))
}

/// An entry whose package is at an exact version already (a registry's): its artifact's
/// integrity recorded in `"pin"`. The sentence says when the version is younger than the
/// cool-down (the person chose it: it is taken, and said).
pub async fn record(
    entry: &mut serde_json::Value,
    min_age_days: u64,
) -> Result<Option<String>, String> {
    let (command, args) = command_line(entry);
    let Some(spec) = spec(&command, &args) else {
        return Ok(None);
    };
    let Some(version) = spec.version.clone() else {
        return Ok(None);
    };
    let releases = super::index::releases(spec.index, &spec.name).await?;
    let Some(r) = releases.get(&version).cloned() else {
        return Err(format!(
            "{} does not list {}",
            super::index::base(spec.index),
            spec.pinned(&version)
        ));
    };
    apply(entry, &spec, &r);
    let age = age_days(&r, crate::logs::now_ms());
    Ok(age.filter(|d| *d < min_age_days).map(|d| {
        format!(
            "note: {} was published {d} day{} ago, within the {min_age_days}-day cool-down `pin --update` waits out",
            spec.pinned(&version),
            if d == 1 { "" } else { "s" }
        )
    }))
}

/// Why a runner's command line does not name a package from an index (a URL, a path, a git
/// spec, an alias): it cannot be pinned, and runs whatever that place serves.
pub fn not_a_package(command: &str, args: &[String]) -> Option<String> {
    let s = spec(command, args)?;
    let checked = match s.index {
        Index::Npm => super::check::npm_name(&s.name),
        Index::Pypi => super::check::pypi_name(&s.name),
    };
    checked.err().map(|e| {
        format!(
            "it runs {} with something that is not a package from its index ({e}): it cannot be pinned",
            std::path::Path::new(command).file_name().and_then(|n| n.to_str()).unwrap_or(command)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    /// The package of each runner's command line is found, pinned or not, past its flags.
    #[test]
    fn the_package_of_a_runner_command_is_found_pinned_or_not() {
        let s = spec(
            "npx",
            &args(&["-y", "@modelcontextprotocol/server-everything", "stdio"]),
        )
        .unwrap();
        assert_eq!(
            (s.at, s.name.as_str(), s.version.as_deref()),
            (1, "@modelcontextprotocol/server-everything", None)
        );
        assert_eq!(
            s.pinned("2026.8.31"),
            "@modelcontextprotocol/server-everything@2026.8.31"
        );
        let s = spec("/usr/bin/npx", &args(&["--yes", "pkg@1.4.2"])).unwrap();
        assert_eq!(s.version.as_deref(), Some("1.4.2"));
        assert_eq!(
            spec("npx", &args(&["-y", "pkg@latest"])).unwrap().version,
            None
        );
        let s = spec(
            "uvx",
            &args(&["--from", "x", "mcp-server-time==2026.1.0", "--tz", "UTC"]),
        )
        .unwrap();
        assert_eq!(
            (s.at, s.name.as_str(), s.version.as_deref()),
            (2, "mcp-server-time", Some("2026.1.0"))
        );
        assert_eq!(
            spec("uvx", &args(&["mcp-server-time"]))
                .unwrap()
                .pinned("1.0"),
            "mcp-server-time==1.0"
        );
        assert_eq!(spec("node", &args(&["server.js"])), None);
    }
}
