//! Client profiles' bearer tokens: one per profile in `clients`, 256 random bits, kept in the
//! keychain as `client-token:ID` (or, without a reachable keychain, `DATA_DIR/client-tokens/ID`,
//! 0600). The gateway token is the `default` profile's and lives in `crate::token`. A token
//! names its profile; rotating or removing one bumps the generation the gateway watches to end
//! that profile's sessions at once.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use tokio::sync::watch;

use crate::secrets::{KeychainStore, SecretError, SecretSource};

/// The profile every client holding the gateway token gets: every server, every tool.
pub const DEFAULT_PROFILE: &str = "default";

/// One client profile as `gatehouse clients` shows it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ClientInfo {
    /// The profile's id (`default` is the gateway token's).
    pub id: String,
    /// The servers it sees (`None`: all).
    pub servers: Option<Vec<String>>,
    /// How many tools it sees now.
    pub tools: usize,
    /// The most tools the client of that name handles well (Cursor 40, VS Code 128), if known.
    pub limit: Option<usize>,
    /// The clients seen on this profile in the last 5 minutes, most recent first.
    #[serde(default)]
    pub connected: Vec<Connected>,
    /// How long a call of this profile's clients waits for the person (`approval.timeout_secs`).
    #[serde(default)]
    pub approval_timeout_secs: u64,
    /// Names shown to this profile that are longer than its client's budget (none, unless kept
    /// from before a budget changed: the next listing replaces them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub too_long: Vec<String>,
}

/// A client seen on the gateway: who it said it is and what it speaks.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Connected {
    /// `clientInfo.name` (bounded), or "unnamed client".
    pub name: String,
    /// `clientInfo.version` (bounded), when given.
    pub version: Option<String>,
    /// The protocol revision it speaks.
    pub protocol: Option<String>,
    /// The client profile it connected with (`default`: the gateway token).
    pub profile: String,
    /// When it was last active (ms since the epoch).
    pub last_seen_ms: u64,
    /// Whether its session is still open.
    pub open: bool,
    /// How long it waits for a call's answer before giving up, when known (by its name).
    #[serde(default)]
    pub gives_up_after_secs: Option<u64>,
    /// The known client (or other client connected here) whose name this one's imitates
    /// (`text::imitation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imitates: Option<String>,
}

/// How long a client known by its `clientInfo.name` waits for a request's answer, when that is
/// known and shorter than an approval may take: the MCP Inspector's CLI is built on the
/// TypeScript SDK, whose requests time out at 60 s (a held call it is waiting on is abandoned
/// then). Clients seen waiting longer (Claude Code, Codex, Gemini CLI) have none listed.
pub fn known_timeout_secs(client_name: &str) -> Option<u64> {
    match client_name {
        "inspector-cli" => Some(60),
        _ => None,
    }
}

/// The tool limit of a client known by its profile's name: Cursor warns past 40 tools, VS Code
/// caps a request at 128; others have none known.
pub fn known_limit(id: &str) -> Option<usize> {
    match id {
        "cursor" => Some(40),
        "vscode" | "vs-code" | "code" => Some(128),
        _ => None,
    }
}

/// The keychain account of a profile's token.
pub fn keychain_name(id: &str) -> String {
    format!("client-token:{id}")
}

/// The profiles' tokens, by profile id.
pub struct ClientTokens {
    keychain: Option<KeychainStore>,
    dir: PathBuf,
    map: RwLock<BTreeMap<String, Arc<str>>>,
    generation: watch::Sender<u64>,
}

impl ClientTokens {
    /// Tokens kept in `keychain` when given and reachable, else under `data_dir/client-tokens`.
    pub fn new(keychain: Option<KeychainStore>, data_dir: PathBuf) -> ClientTokens {
        ClientTokens {
            keychain,
            dir: data_dir.join("client-tokens"),
            map: RwLock::new(BTreeMap::new()),
            generation: watch::channel(0).0,
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<str>>> {
        crate::sync::read(&self.map)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<str>>> {
        crate::sync::write(&self.map)
    }

    /// Makes the table hold exactly `ids`: a profile without a token gets one (created and
    /// stored), a token of a profile no longer configured is dropped (and deleted). Blocking.
    pub fn sync(&self, ids: &[String]) -> Result<(), String> {
        let mut changed = false;
        let known: Vec<String> = self.read().keys().cloned().collect();
        for gone in known.iter().filter(|k| !ids.contains(k)) {
            self.write().remove(gone);
            self.forget(gone);
            changed = true;
        }
        for id in ids {
            if self.read().contains_key(id) {
                continue;
            }
            let token = match self.load(id)? {
                Some(t) => t,
                None => {
                    let t = crate::token::new_token()
                        .map_err(|e| format!("creating a token for client \"{id}\": {e}"))?;
                    self.store(id, &t)?;
                    t
                }
            };
            self.write().insert(id.clone(), Arc::from(token));
            changed = true;
        }
        if changed {
            self.generation.send_modify(|g| *g += 1);
        }
        Ok(())
    }

    /// A new token for profile `id`; the old one stops working at once. Blocking.
    pub fn rotate(&self, id: &str) -> Result<String, String> {
        if !self.read().contains_key(id) {
            return Err(format!("there is no client profile \"{id}\""));
        }
        let token = crate::token::new_token().map_err(|e| e.to_string())?;
        self.store(id, &token)?;
        self.write()
            .insert(id.to_owned(), Arc::from(token.as_str()));
        self.generation.send_modify(|g| *g += 1);
        Ok(token)
    }

    /// Every profile's token.
    pub fn all(&self) -> Vec<(String, Arc<str>)> {
        self.read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Profile `id`'s token.
    pub fn token(&self, id: &str) -> Option<Arc<str>> {
        self.read().get(id).cloned()
    }

    /// The profile a presented token belongs to (compared in constant time with each).
    pub fn resolve(&self, presented: &str) -> Option<String> {
        let mut found = None;
        for (id, token) in self.read().iter() {
            if crate::token::constant_time_eq(presented.as_bytes(), token.as_bytes()) {
                found = Some(id.clone());
            }
        }
        found
    }

    /// Changes whenever a token is created, rotated or dropped.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    fn file(&self, id: &str) -> PathBuf {
        self.dir.join(id)
    }

    fn load(&self, id: &str) -> Result<Option<String>, String> {
        if let Some(k) = &self.keychain {
            match k.get(&keychain_name(id)) {
                Ok(t) if t.len() >= 32 => return Ok(Some(t)),
                Ok(_) | Err(SecretError::Missing { .. }) => {}
                Err(e) => tracing::warn!("{e}"),
            }
        }
        match std::fs::read_to_string(self.file(id)) {
            Ok(t) if t.trim().len() >= 32 => Ok(Some(t.trim().to_owned())),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read {}: {e}", self.file(id).display())),
        }
    }

    fn store(&self, id: &str, token: &str) -> Result<(), String> {
        if let Some(k) = &self.keychain {
            match k.set(&keychain_name(id), token) {
                Ok(()) => {
                    let _ = std::fs::remove_file(self.file(id));
                    return Ok(());
                }
                Err(e) => tracing::warn!(
                    "{e}; the token of client \"{id}\" is kept in {} (0600)",
                    self.file(id).display()
                ),
            }
        }
        crate::private::create_dir(&self.dir)
            .and_then(|()| crate::token::write_token_file(&self.file(id), token))
            .map_err(|e| format!("cannot write {}: {e}", self.file(id).display()))
    }

    fn forget(&self, id: &str) {
        if let Some(k) = &self.keychain {
            let _ = k.delete(&keychain_name(id));
        }
        let _ = std::fs::remove_file(self.file(id));
    }
}
