//! Versions pinned: a package a runner fetches (`npx pkg`, `uvx pkg`) runs the exact version
//! recorded in its entry, never whatever the package index serves today. Finds the unpinned
//! package in a command line, asks the index for its latest version (bounded), and rewrites the
//! argument to `pkg@1.4.2` / `pkg==1.4.2`.

use std::time::Duration;

/// Which index a runner fetches from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    /// npm (`npx`, `pnpx`, `bunx`).
    Npm,
    /// PyPI (`uvx`, `pipx run`).
    Pypi,
}

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

/// The index's base URL: `npm_config_registry` (as npm itself reads it) or
/// `GATEHOUSE_PYPI_URL`, else the public ones.
fn base(index: Index) -> String {
    let env = match index {
        Index::Npm => ["npm_config_registry", "NPM_CONFIG_REGISTRY"]
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty())),
        Index::Pypi => std::env::var("GATEHOUSE_PYPI_URL")
            .ok()
            .filter(|v| !v.is_empty()),
    };
    let url = env.unwrap_or_else(|| match index {
        Index::Npm => "https://registry.npmjs.org".into(),
        Index::Pypi => "https://pypi.org".into(),
    });
    url.trim_end_matches('/').to_owned()
}

/// The latest version the index serves of `name` (10 s, 1 MiB at most).
pub async fn latest(index: Index, name: &str) -> Result<String, String> {
    let root = base(index);
    let url = match index {
        Index::Npm => format!("{root}/{}/latest", name.replace('/', "%2F")),
        Index::Pypi => format!("{root}/pypi/{name}/json"),
    };
    let http = crate::http_client_builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())?;
    let work = async {
        let mut r = http.get(&url).send().await.map_err(|e| {
            format!(
                "cannot ask {root} for {name}'s version: {}",
                crate::http_client::http_error_chain(&e)
            )
        })?;
        if !r.status().is_success() {
            return Err(format!(
                "{root} has no package {name} (HTTP {})",
                r.status().as_u16()
            ));
        }
        let mut body = Vec::new();
        while let Some(c) = r.chunk().await.map_err(|e| e.to_string())? {
            if body.len() + c.len() > 1 << 20 {
                return Err(format!("{root}'s answer about {name} is larger than 1 MiB"));
            }
            body.extend_from_slice(&c);
        }
        let v: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|_| format!("{root} answered no version for {name}"))?;
        let version = match index {
            Index::Npm => v.get("version"),
            Index::Pypi => v.pointer("/info/version"),
        };
        version
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("{root} answered no version for {name}"))
    };
    tokio::time::timeout(Duration::from_secs(12), work)
        .await
        .map_err(|_| format!("{root} did not say {name}'s version within 12 s"))?
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
