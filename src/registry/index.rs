//! What a package index says of a package: its releases — each version (checked by the
//! ecosystem's grammar: an answer naming a range, an alias, a URL or a path is not a version),
//! when it was published, and its artifact's integrity (npm's `dist.integrity`, PyPI's sha256).
//! Bounded (8 MiB, 20 s). From `npm_config_registry` (as npm reads it) or `GATEHOUSE_PYPI_URL`,
//! else the public indexes.

use std::time::Duration;

use serde_json::Value;

/// Which index a runner fetches from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    /// npm (`npx`, `pnpx`, `bunx`).
    Npm,
    /// PyPI (`uvx`, `pipx run`).
    Pypi,
}

/// The most an index's answer about one package may hold.
pub const MAX_BODY: usize = 8 << 20;
/// How long that answer may take, whole.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// One release of a package.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    /// Its exact version.
    pub version: String,
    /// When it was published (ms since the epoch), when the index says.
    pub published_ms: Option<u64>,
    /// Its artifact's integrity: `sha512-…` (npm) or `sha256:…` (PyPI).
    pub integrity: Option<String>,
    /// A pre-release (`1.0.0-rc.1`, `1.0rc1`): never chosen unless pinned by hand.
    pub pre: bool,
}

/// A package's releases as the index lists them.
#[derive(Debug, Clone, Default)]
pub struct Releases {
    /// The version the index calls latest (checked by grammar).
    pub latest: String,
    /// Every release with an exact version, in the index's order.
    pub all: Vec<Release>,
}

impl Releases {
    /// The release of `version`.
    pub fn get(&self, version: &str) -> Option<&Release> {
        self.all.iter().find(|r| r.version == version)
    }
}

/// The index's base URL.
pub fn base(index: Index) -> String {
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

fn iso_ms(s: &str) -> Option<u64> {
    let ts: jiff::Timestamp = s.parse().ok()?;
    u64::try_from(ts.as_millisecond()).ok()
}

/// Every release of `name` the index lists.
pub async fn releases(index: Index, name: &str) -> Result<Releases, String> {
    let root = base(index);
    let url = match index {
        Index::Npm => format!("{root}/{}", name.replace('/', "%2F")),
        Index::Pypi => format!("{root}/pypi/{name}/json"),
    };
    let http = crate::http_client_builder()
        .timeout(DEADLINE)
        .build()
        .map_err(|e| e.to_string())?;
    let work = async {
        let mut r = http.get(&url).send().await.map_err(|e| {
            format!(
                "cannot ask {root} about {name}: {}",
                crate::http_client::http_error_chain(&e)
            )
        })?;
        if r.status() == reqwest::StatusCode::NOT_FOUND {
            return Err(format!("{root} has no package {name} (HTTP 404)"));
        }
        if !r.status().is_success() {
            return Err(format!(
                "{root} could not answer about {name} (HTTP {}); try again later",
                r.status().as_u16()
            ));
        }
        let mut body = Vec::new();
        while let Some(c) = r.chunk().await.map_err(|e| e.to_string())? {
            if body.len() + c.len() > MAX_BODY {
                return Err(format!("{root}'s answer about {name} is larger than 8 MiB"));
            }
            body.extend_from_slice(&c);
        }
        let v: Value = serde_json::from_slice(&body)
            .map_err(|_| format!("{root} answered no releases for {name}"))?;
        match index {
            Index::Npm => npm(&v, &root, name),
            Index::Pypi => pypi(&v, &root, name),
        }
    };
    tokio::time::timeout(DEADLINE + Duration::from_secs(2), work)
        .await
        .map_err(|_| format!("{root} did not answer about {name} within 20 s"))?
}

/// An npm packument: `dist-tags.latest`, `versions[v].dist.integrity`, `time[v]`.
pub(crate) fn npm(v: &Value, root: &str, name: &str) -> Result<Releases, String> {
    let latest = v
        .pointer("/dist-tags/latest")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{root} names no latest version of {name}"))?;
    super::check::npm_version(latest).map_err(|e| format!("{root} answered for {name}: {e}"))?;
    let mut all = Vec::new();
    if let Some(versions) = v.get("versions").and_then(Value::as_object) {
        for (ver, meta) in versions {
            if super::check::npm_version(ver).is_err() {
                continue;
            }
            all.push(Release {
                version: ver.clone(),
                published_ms: v
                    .pointer(&format!(
                        "/time/{}",
                        ver.replace('~', "~0").replace('/', "~1")
                    ))
                    .and_then(Value::as_str)
                    .and_then(iso_ms),
                integrity: meta
                    .pointer("/dist/integrity")
                    .and_then(Value::as_str)
                    .filter(|i| {
                        i.starts_with("sha512-")
                            || i.starts_with("sha256-")
                            || i.starts_with("sha1-")
                    })
                    .map(str::to_owned),
                pre: ver
                    .split_once('+')
                    .map_or(ver.as_str(), |(c, _)| c)
                    .contains('-'),
            });
        }
    }
    Ok(Releases {
        latest: latest.to_owned(),
        all,
    })
}

/// PyPI's JSON: `info.version`, `releases[v][*]` (upload time, sha256, yanked).
pub(crate) fn pypi(v: &Value, root: &str, name: &str) -> Result<Releases, String> {
    let latest = v
        .pointer("/info/version")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{root} names no latest version of {name}"))?;
    super::check::pypi_version(latest).map_err(|e| format!("{root} answered for {name}: {e}"))?;
    let mut all = Vec::new();
    if let Some(releases) = v.get("releases").and_then(Value::as_object) {
        for (ver, files) in releases {
            if super::check::pypi_version(ver).is_err() {
                continue;
            }
            let mut files: Vec<&Value> = files
                .as_array()
                .map(|f| f.iter().filter(|f| f["yanked"] != true).collect())
                .unwrap_or_default();
            if files.is_empty() {
                continue;
            }
            // The sdist when there is one, else the first file by name: what the pin records.
            files.sort_by_key(|f| {
                (
                    f["packagetype"] != "sdist",
                    f["filename"].as_str().unwrap_or("").to_owned(),
                )
            });
            let published_ms = files
                .iter()
                .filter_map(|f| f["upload_time_iso_8601"].as_str().and_then(iso_ms))
                .min();
            let integrity = files[0]
                .pointer("/digests/sha256")
                .and_then(Value::as_str)
                .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
                .map(|h| format!("sha256:{}", h.to_ascii_lowercase()));
            let pre = ver.contains('a')
                || ver.contains('b')
                || ver.contains("rc")
                || ver.contains(".dev");
            all.push(Release {
                version: ver.clone(),
                published_ms,
                integrity,
                pre,
            });
        }
    }
    Ok(Releases {
        latest: latest.to_owned(),
        all,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An index's answer is read by grammar: a "latest" that is an alias, a range or a path is
    /// refused; releases that are not exact versions are skipped; times and integrity are read.
    #[test]
    fn an_index_answer_is_checked_by_grammar() {
        let p = json!({
            "dist-tags": {"latest": "1.2.0"},
            "versions": {
                "1.2.0": {"dist": {"integrity": "sha512-AAA"}},
                "1.1.0": {"dist": {"integrity": "sha512-BBB"}},
                "file:../x": {}, "2.0.0-rc.1": {"dist": {"integrity": "sha512-CCC"}}
            },
            "time": {"1.2.0": "2026-11-27T10:00:00.000Z", "1.1.0": "2026-10-01T00:00:00Z"}
        });
        let r = npm(&p, "r", "pkg").unwrap();
        assert_eq!(r.latest, "1.2.0");
        assert_eq!(r.all.len(), 3);
        let v = r.get("1.2.0").unwrap();
        assert_eq!(v.integrity.as_deref(), Some("sha512-AAA"));
        assert!(v.published_ms.unwrap() > 1_700_000_000_000);
        assert!(r.get("2.0.0-rc.1").unwrap().pre);
        for evil in ["npm:evil-pkg@6.6.6", "^1", "file:x", "https://evil/x.tgz"] {
            let p = json!({"dist-tags": {"latest": evil}, "versions": {}});
            assert!(npm(&p, "r", "pkg").is_err(), "{evil}");
        }
        let y = json!({"info": {"version": "1.0"}, "releases": {
            "1.0": [{"packagetype": "bdist_wheel", "filename": "x-1.0-py3-none-any.whl",
                     "digests": {"sha256": "a".repeat(64)}, "upload_time_iso_8601": "2026-11-01T00:00:00Z"},
                    {"packagetype": "sdist", "filename": "x-1.0.tar.gz",
                     "digests": {"sha256": "b".repeat(64)}, "upload_time_iso_8601": "2026-11-01T00:00:01Z"}],
            "0.9": [{"yanked": true, "digests": {"sha256": "c".repeat(64)}}],
            ">=0": []
        }});
        let r = pypi(&y, "r", "x").unwrap();
        assert_eq!(r.all.len(), 1);
        assert_eq!(
            r.get("1.0").unwrap().integrity.as_deref(),
            Some(format!("sha256:{}", "b".repeat(64)).as_str())
        );
    }
}
