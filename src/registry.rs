//! The MCP Registry as a catalog: search, a server's versions, one version's `server.json`
//! (its published `v0.1` API), from the official registry or a company's own — every answer
//! bounded (4 MiB, 15 s) and checked against the API's shape; and a `server.json` made into a
//! Gatehouse entry pinned to its exact version ([`entry`]).

pub mod check;
pub mod entry;
pub mod index;
pub mod model;
pub mod pin;
pub mod store;

use std::time::Duration;

use model::{ServerList, ServerResponse};

/// The official registry.
pub const DEFAULT_URL: &str = "https://registry.modelcontextprotocol.io";
/// The variable that names another registry (over the config's `registry.url`).
pub const ENV_URL: &str = "GATEHOUSE_REGISTRY_URL";
/// The most a registry answer may hold.
pub const MAX_BODY: usize = 4 << 20;
/// How long a registry answer may take, whole.
pub const DEADLINE: Duration = Duration::from_secs(15);
/// Results asked for per page.
pub const PAGE: usize = 30;

/// A registry to ask.
pub struct Registry {
    base: reqwest::Url,
    http: reqwest::Client,
}

impl Registry {
    /// The registry `GATEHOUSE_REGISTRY_URL` names, else the config's `registry.url`, else the
    /// official one.
    pub fn new(configured: Option<&str>) -> Result<Registry, String> {
        let from_env = std::env::var(ENV_URL).ok().filter(|u| !u.is_empty());
        let url = from_env.as_deref().or(configured).unwrap_or(DEFAULT_URL);
        let base = reqwest::Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| format!("the registry URL {url:?} is not an http(s) address"))?;
        let http = crate::http_client_builder()
            .timeout(DEADLINE)
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        Ok(Registry { base, http })
    }

    /// Where it is.
    pub fn url(&self) -> &str {
        self.base.as_str()
    }

    fn url_of(&self, segments: &[&str]) -> reqwest::Url {
        let mut u = self.base.clone();
        if let Ok(mut path) = u.path_segments_mut() {
            path.pop_if_empty();
            for s in segments {
                path.push(s);
            }
        }
        u
    }

    /// Latest versions whose name has `text`, one page (`cursor` from the last page).
    pub async fn search(&self, text: &str, cursor: Option<&str>) -> Result<ServerList, String> {
        let mut u = self.url_of(&["v0.1", "servers"]);
        u.query_pairs_mut()
            .append_pair("search", text)
            .append_pair("version", "latest")
            .append_pair("limit", &PAGE.to_string());
        if let Some(c) = cursor {
            u.query_pairs_mut().append_pair("cursor", c);
        }
        self.fetch(u, "").await
    }

    /// One version of server `name` (`None`: the latest).
    pub async fn get(&self, name: &str, version: Option<&str>) -> Result<ServerResponse, String> {
        let v = version.unwrap_or("latest");
        let u = self.url_of(&["v0.1", "servers", name, "versions", v]);
        self.fetch(u, name).await
    }

    /// Every version of server `name`, newest first.
    pub async fn versions(&self, name: &str) -> Result<ServerList, String> {
        let u = self.url_of(&["v0.1", "servers", name, "versions"]);
        self.fetch(u, name).await
    }

    async fn fetch<T: serde::de::DeserializeOwned>(
        &self,
        u: reqwest::Url,
        name: &str,
    ) -> Result<T, String> {
        let at = self.base.as_str();
        let work = async {
            let mut r = self
                .http
                .get(u)
                .header("accept", "application/json")
                .send()
                .await
                .map_err(|e| {
                    if e.is_timeout() {
                        return format!(
                            "the registry at {at} did not answer within {} s",
                            DEADLINE.as_secs()
                        );
                    }
                    format!(
                        "cannot reach the registry at {at}: {}",
                        crate::http_client::http_error_chain(&e)
                    )
                })?;
            match r.status().as_u16() {
                200 => {}
                404 if !name.is_empty() => {
                    return Err(format!(
                        "the registry at {at} has no server {name:?} (or no such version)"
                    ))
                }
                s => return Err(format!("the registry at {at} answered HTTP {s}")),
            }
            let mut body = Vec::new();
            while let Some(chunk) = r.chunk().await.map_err(|e| {
                if e.is_timeout() {
                    format!(
                        "the registry at {at} did not answer within {} s",
                        DEADLINE.as_secs()
                    )
                } else {
                    format!("the registry's answer broke off: {e}")
                }
            })? {
                if body.len() + chunk.len() > MAX_BODY {
                    return Err(format!(
                        "the registry at {at} sent more than {} MiB; it is not what its API answers",
                        MAX_BODY >> 20
                    ));
                }
                body.extend_from_slice(&chunk);
            }
            serde_json::from_slice::<T>(&body).map_err(|e| {
                format!("the registry at {at} answered something its API does not describe ({e})")
            })
        };
        match tokio::time::timeout(DEADLINE, work).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "the registry at {at} did not answer within {} s",
                DEADLINE.as_secs()
            )),
        }
    }
}

/// The container engine on this machine, if any (`docker`, then `podman`).
pub fn container_engine() -> Option<&'static str> {
    let path = std::env::var_os("PATH")?;
    ["docker", "podman"]
        .into_iter()
        .find(|e| std::env::split_paths(&path).any(|d| d.join(e).is_file()))
}

/// Whether `program` is on this machine's `PATH` (or is a path to a file).
pub fn installed(program: &str) -> bool {
    if program.contains('/') {
        return std::path::Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
}

/// When the runner a command needs (`npx`, `uvx`, `docker`, `podman`) is not installed: what
/// to install. `None` for anything else, or a runner that is there.
pub fn runner_missing(command: &str) -> Option<String> {
    let base = std::path::Path::new(command)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(command);
    let hint = match base {
        "npx" | "npm" | "node" => {
            "install Node.js (it brings npx): https://nodejs.org or your package manager"
        }
        "uvx" | "uv" => {
            "install uv (it brings uvx): https://docs.astral.sh/uv/ or `pipx install uv`"
        }
        "pnpx" | "pnpm" => "install pnpm: https://pnpm.io/installation",
        "bunx" | "bun" => "install Bun: https://bun.sh",
        "docker" | "podman" => "install Docker or Podman",
        _ => return None,
    };
    (!installed(command)).then(|| format!("{base} is not installed here: {hint}"))
}
