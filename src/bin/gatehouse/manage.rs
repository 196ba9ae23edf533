//! Managing servers from a terminal: `add`, `remove`, `enable`, `disable` (through the running
//! hub's control socket, or straight to the config file — same validated, locked, atomic edit —
//! when none runs), `restart --all`, and `test` (a server started on its own and reported on).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use gatehouse::config::{self, Config};
use gatehouse::control::{ControlClient, ControlError, Request};
use gatehouse::ServerStatus;
use serde_json::{json, Map, Value};

pub use crate::args::{AddArgs, SandboxArgs};

impl SandboxArgs {
    fn given(&self) -> bool {
        self.level.is_some()
            || !self.read.is_empty()
            || !self.write.is_empty()
            || self.no_network
            || !self.allow_net.is_empty()
    }

    /// The entry's `"sandbox"`, absolute paths made from relative ones; `None` for the default.
    fn value(&self) -> Result<Option<Value>, String> {
        if !self.given() {
            return Ok(None);
        }
        let absolute = |p: &String| -> Result<String, String> {
            if p.starts_with('/') || p.starts_with("~/") {
                return Ok(p.clone());
            }
            std::path::absolute(p)
                .map(|a| a.to_string_lossy().into_owned())
                .map_err(|e| format!("{p}: {e}"))
        };
        let mut o = Map::new();
        if let Some(l) = &self.level {
            o.insert("policy".into(), json!(l));
        }
        let read: Vec<String> = self.read.iter().map(absolute).collect::<Result<_, _>>()?;
        let write: Vec<String> = self.write.iter().map(absolute).collect::<Result<_, _>>()?;
        if !read.is_empty() {
            o.insert("read".into(), json!(read));
        }
        if !write.is_empty() {
            o.insert("write".into(), json!(write));
        }
        if self.no_network {
            o.insert("network".into(), json!(false));
        }
        if !self.allow_net.is_empty() {
            o.insert("network".into(), json!({ "allow": self.allow_net }));
        }
        Ok(Some(Value::Object(o)))
    }
}

/// `K=V` pairs into a JSON object; `secret` makes each value a keychain reference.
pub fn pairs(flag: &str, items: &[String], secret: bool) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for item in items {
        let (k, v) = item
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| format!("{flag} {item}: write it as NAME=VALUE"))?;
        let value = if secret {
            config::validate_secret_name(v)?;
            json!({ "secret": v })
        } else {
            json!(v)
        };
        if out.insert(k.to_owned(), value).is_some() {
            return Err(format!("{flag}: {k} is given twice"));
        }
    }
    Ok(out)
}

/// The file-format entry `add` describes.
pub fn entry(a: &AddArgs) -> Result<Value, String> {
    let mut e = Map::new();
    match (&a.url, a.command.split_first()) {
        (Some(_), Some(_)) => {
            return Err(
                "give either --url URL (a remote server) or -- COMMAND ARGS (a local one), not both"
                    .into(),
            )
        }
        (None, None) => {
            return Err(format!(
                "what should \"{}\" run? e.g. `gatehouse add {} -- npx -y @modelcontextprotocol/server-everything`, or `gatehouse add {} --url https://example.com/mcp`",
                a.id.as_deref().unwrap_or("ID"), a.id.as_deref().unwrap_or("ID"), a.id.as_deref().unwrap_or("ID")
            ))
        }
        (Some(url), None) => {
            if !a.env.is_empty() || !a.secret_env.is_empty() || a.cwd.is_some() || a.sandbox.given() {
                return Err("--env, --secret-env, --cwd and the sandbox flags are for local servers; a remote one takes --header and --secret-header".into());
            }
            e.insert("url".into(), json!(url));
            let mut headers = pairs("--header", &a.header, false)?;
            for (k, v) in pairs("--secret-header", &a.secret_header, true)? {
                if headers.insert(k.clone(), v).is_some() {
                    return Err(format!("header {k} is given twice"));
                }
            }
            if !headers.is_empty() {
                e.insert("headers".into(), Value::Object(headers));
            }
        }
        (None, Some((command, args))) => {
            if !a.header.is_empty() || !a.secret_header.is_empty() {
                return Err("--header and --secret-header are for remote (--url) servers; a local one takes --env and --secret-env".into());
            }
            e.insert("command".into(), json!(command));
            if !args.is_empty() {
                e.insert("args".into(), json!(args));
            }
            let mut env = pairs("--env", &a.env, false)?;
            for (k, v) in pairs("--secret-env", &a.secret_env, true)? {
                if env.insert(k.clone(), v).is_some() {
                    return Err(format!("env {k} is given twice"));
                }
            }
            if !env.is_empty() {
                e.insert("env".into(), Value::Object(env));
            }
            if let Some(cwd) = &a.cwd {
                e.insert("cwd".into(), json!(cwd));
            }
            if let Some(s) = a.sandbox.value()? {
                e.insert("sandbox".into(), s);
            }
        }
    }
    match a.approval.as_str() {
        "ask" => {
            e.insert("requires_approval".into(), json!(true));
        }
        "default" => {}
        other => {
            return Err(format!(
            "--approval {other}: use ask (every call asks) or default (approval.default decides)"
        ))
        }
    }
    Ok(Value::Object(e))
}

/// A config edit: sent to the running hub, or — when none runs — made to the file directly
/// under the same lock (the hub's own code path: `config::edit`).
pub enum Edit {
    Save {
        id: String,
        entry: Value,
    },
    /// An existing entry replaced.
    Replace {
        id: String,
        entry: Value,
    },
    Remove {
        id: String,
    },
    Enabled {
        id: String,
        enabled: bool,
    },
}

impl Edit {
    fn request(&self) -> Request {
        match self {
            Edit::Save { id, entry } => Request::SaveServer {
                original: None,
                id: id.clone(),
                entry: entry.clone(),
            },
            Edit::Replace { id, entry } => Request::SaveServer {
                original: Some(id.clone()),
                id: id.clone(),
                entry: entry.clone(),
            },
            Edit::Remove { id } => Request::RemoveServer { id: id.clone() },
            Edit::Enabled { id, enabled } => Request::SetEnabled {
                id: id.clone(),
                enabled: *enabled,
            },
        }
    }

    fn apply(&self, c: &Config) -> Result<Config, String> {
        match self {
            Edit::Save { id, entry } => c.with_server(None, id, entry),
            Edit::Replace { id, entry } => c.with_server(Some(id), id, entry),
            Edit::Remove { id } => c.without_server(id),
            Edit::Enabled { id, enabled } => c.with_enabled(id, *enabled),
        }
    }
}

/// Where an edit went.
pub enum Applied {
    /// The running hub applied it.
    Hub,
    /// No hub runs: the file was edited.
    File(PathBuf),
}

pub async fn apply(
    client: &ControlClient,
    edit: Edit,
    config: Option<PathBuf>,
) -> Result<Applied, String> {
    match client.request::<Value>(&edit.request()).await {
        Ok(_) => Ok(Applied::Hub),
        Err(ControlError::NotRunning(_)) => {
            let path = config.unwrap_or_else(config::default_config_path);
            let p = path.clone();
            tokio::task::spawn_blocking(move || config::edit(&p, |c| edit.apply(c)))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            Ok(Applied::File(path))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Waits (bounded) until server `id` is running or has failed; its last status.
async fn settle(client: &ControlClient, id: &str, limit: Duration) -> Option<ServerStatus> {
    let deadline = Instant::now() + limit;
    loop {
        let rows: Vec<ServerStatus> = client.request(&Request::Status).await.ok()?;
        let s = rows.into_iter().find(|s| s.id == id)?;
        let settled = matches!(
            s.state,
            gatehouse::State::Running
                | gatehouse::State::Failed
                | gatehouse::State::Stopped
                | gatehouse::State::NeedsSignIn
        ) || s.next_retry_ms.is_some();
        if settled || Instant::now() >= deadline {
            return Some(s);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Says how a server ended up after an edit, and what to do next.
fn report(s: &ServerStatus) {
    match s.state {
        gatehouse::State::Running => say!(
            "{} is running with {} tool{}; see them with `gatehouse tools {}`",
            s.id,
            s.tools,
            if s.tools == 1 { "" } else { "s" },
            s.id
        ),
        gatehouse::State::Stopped => say!("{} is stopped", s.id),
        gatehouse::State::Idle => say!(
            "{} is idle with {} tool{}: it starts when a call needs it",
            s.id,
            s.tools,
            if s.tools == 1 { "" } else { "s" }
        ),
        gatehouse::State::Invalid => {
            say!("{} cannot be read", s.id);
            if let Some(e) = &s.last_error {
                say!("  {e}");
            }
        }
        gatehouse::State::NeedsSignIn => {
            say!("{} needs a sign-in", s.id);
            if let Some(e) = &s.last_error {
                say!("  {e}");
            }
            say!("  sign in with `gatehouse auth login {}`", s.id);
        }
        state => {
            say!("{} is {state}", s.id);
            if let Some(e) = &s.last_error {
                say!("  last error: {e}");
            }
            say!(
                "  see why with `gatehouse logs {}`, or check it on its own with `gatehouse test {}`",
                s.id, s.id
            );
        }
    }
    for w in &s.warnings {
        say!("  warning: {w}");
    }
}

pub async fn add(client: &ControlClient, a: AddArgs) -> Result<(), String> {
    let mut entry = entry(&a)?;
    let id = a.id.clone().unwrap_or_default();
    // Where a remote's URL leads is checked before it is written (and again at every connect).
    if let Some(url) = entry.get("url").and_then(Value::as_str) {
        use gatehouse::supervisor::remote::{check_address, AddressError};
        let private = entry
            .get("allow_private")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        match check_address(url, private).await {
            Err(AddressError::Refused(e)) => return Err(format!("{e} — nothing was added")),
            Err(AddressError::Unresolved(e)) => {
                say!("note: {e}; where it leads is checked when Gatehouse connects")
            }
            Ok(_) => {}
        }
    }
    if a.pin {
        let min_age = min_age_days(client, a.config.as_deref()).await;
        pin_new(&id, &mut entry, min_age).await;
    }
    let pinned = crate::install::pinned_package(&entry);
    save(client, id, entry, a.config.clone()).await?;
    // A hub installs what it saves; without one, the artifact is installed here.
    if let Some((spec, p)) = pinned {
        let min_age = min_age_days(client, a.config.as_deref()).await;
        let store = crate::install::store(client).await;
        crate::install::ensure_installed(&store, &spec, &p, min_age).await?;
    }
    Ok(())
}

/// Saves `entry` as server `id` (through the running hub, else into the config file) and says
/// how it started.
pub async fn save(
    client: &ControlClient,
    id: String,
    entry: Value,
    config: Option<PathBuf>,
) -> Result<(), String> {
    match apply(
        client,
        Edit::Save {
            id: id.clone(),
            entry,
        },
        config,
    )
    .await?
    {
        Applied::Hub => {
            say!("added {id} to the running hub's config");
            if let Some(s) = settle(client, &id, Duration::from_secs(65)).await {
                report(&s);
            }
        }
        Applied::File(path) => {
            say!("added {id} to {}", path.display());
            say!("no hub is running: start one with `gatehouse serve`, or check the server now with `gatehouse test {id}`");
        }
    }
    Ok(())
}

pub async fn remove(
    client: &ControlClient,
    id: String,
    config: Option<PathBuf>,
) -> Result<(), String> {
    match apply(client, Edit::Remove { id: id.clone() }, config).await? {
        Applied::Hub => say!("removed {id} from the running hub's config; it is stopped"),
        Applied::File(path) => say!("removed {id} from {}", path.display()),
    }
    say!("(the previous config is kept as its .bak)");
    Ok(())
}

pub async fn set_enabled(
    client: &ControlClient,
    id: String,
    enabled: bool,
    config: Option<PathBuf>,
) -> Result<(), String> {
    let verb = if enabled { "enabled" } else { "disabled" };
    let edit = Edit::Enabled {
        id: id.clone(),
        enabled,
    };
    match apply(client, edit, config).await? {
        Applied::Hub => {
            say!("{verb} {id} in the running hub's config (kept across restarts)");
            if enabled {
                if let Some(s) = settle(client, &id, Duration::from_secs(65)).await {
                    report(&s);
                }
            } else {
                say!("{id} is stopped; `gatehouse enable {id}` starts it again");
            }
        }
        Applied::File(path) => say!("{verb} {id} in {}", path.display()),
    }
    Ok(())
}

/// `restart --all`: every server, one after the other; each one's outcome.
pub async fn restart_all(client: &ControlClient) -> Result<(), String> {
    let rows: Vec<ServerStatus> = client
        .request(&Request::Status)
        .await
        .map_err(|e| e.to_string())?;
    if rows.is_empty() {
        say!("no servers are configured");
        return Ok(());
    }
    let mut failed = 0;
    for s in rows {
        // What runs is restarted; a disabled or stopped server stays as it is.
        if !s.enabled || s.state == gatehouse::State::Stopped {
            let why = if s.enabled { "stopped" } else { "disabled" };
            say!("left {} as it is ({why})", s.id);
            continue;
        }
        match client
            .request::<ServerStatus>(&Request::Restart { id: s.id.clone() })
            .await
        {
            Ok(_) => say!("restarted {}", s.id),
            Err(e) => {
                failed += 1;
                say!("could not restart {}: {e}", s.id);
            }
        }
    }
    match failed {
        0 => Ok(()),
        n => Err(format!("{n} server(s) could not be restarted")),
    }
}

/// `gatehouse clients`: list the profiles with their tool counts against each client's known
/// limit; `add`, `remove`, `rotate-token` through the running hub.
pub async fn clients(
    client: &ControlClient,
    cmd: Option<crate::args::ClientsCmd>,
    json: bool,
) -> Result<(), String> {
    use crate::args::ClientsCmd;
    use gatehouse::control::ClientInfo;
    let (req, done) = match cmd {
        None => (Request::Clients, None),
        Some(ClientsCmd::Add { id, servers }) => (
            Request::SaveClient {
                id: id.clone(),
                servers,
            },
            Some(format!(
                "added client profile {id}; connect a client with `gatehouse client-config TARGET --client {id}` (or `gatehouse connect --client {id}`)"
            )),
        ),
        Some(ClientsCmd::Remove { id }) => (
            Request::RemoveClient { id: id.clone() },
            Some(format!(
                "removed client profile {id}: its token no longer works and its sessions ended"
            )),
        ),
        Some(ClientsCmd::RotateToken { id }) => (
            Request::RotateClientToken { id: id.clone() },
            Some(format!(
                "client profile {id} has a new token: the old one no longer works and its sessions ended; write it into the client again with `gatehouse client-config TARGET --client {id} --write`"
            )),
        ),
    };
    let rows: Vec<ClientInfo> = client.request(&req).await.map_err(|e| e.to_string())?;
    if let Some(d) = done {
        say!("{d}");
    }
    if json {
        crate::print::json(&rows);
        return Ok(());
    }
    say!("{:<20} {:>6}  SERVERS", "CLIENT", "TOOLS");
    for r in &rows {
        let servers = match &r.servers {
            Some(s) => s.join(", "),
            None => "all".into(),
        };
        say!("{:<20} {:>6}  {servers}", r.id, r.tools);
        let now = gatehouse::logs::now_ms();
        for c in &r.connected {
            say!(
                "    {} {}: {}{}, last seen {} s ago",
                if c.open { "connected" } else { "left     " },
                crate::print::quoted(&c.name),
                c.version.as_deref().map_or(String::new(), |v| format!(
                    "version {}, ",
                    gatehouse::text::reveal(v)
                )),
                c.protocol
                    .as_deref()
                    .map_or("protocol unknown".into(), |p| format!("protocol {p}")),
                now.saturating_sub(c.last_seen_ms) / 1000
            );
            if let Some(like) = &c.imitates {
                say!(
                    "    warning: {}'s name imitates {}: the token is this profile's, whatever the name says",
                    crate::print::quoted(&c.name),
                    crate::print::quoted(like)
                );
            }
            let approval = r.approval_timeout_secs;
            if let Some(gives_up) = c.gives_up_after_secs {
                if approval > gives_up {
                    say!(
                        "    warning: {} gives up on a call after {gives_up} s, and approval.timeout_secs is {approval} s: a call held for your answer may be abandoned before you give it (answer sooner, or lower approval.timeout_secs)",
                        crate::print::quoted(&c.name)
                    );
                }
            }
        }
        if let Some(limit) = r.limit.filter(|l| r.tools > *l) {
            say!(
                "    warning: {} tools is more than this client handles well ({limit}); narrow it with `gatehouse clients add {} --servers …`",
                r.tools, r.id
            );
        }
    }
    Ok(())
}

/// An entry's command and arguments (empty for a remote one).
pub fn command_and_args(entry: &Value) -> (String, Vec<String>) {
    let command = entry
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let args = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    (command, args)
}

/// A new entry's `npx`/`uvx` package pinned past the cool-down (said, or why not).
pub async fn pin_new(id: &str, entry: &mut Value, min_age_days: u64) {
    match gatehouse::registry::pin::pin_new(entry, min_age_days).await {
        Ok(Some(said)) => say!("{}", said.replace("pin ID", &format!("pin {id}"))),
        Ok(None) => {}
        Err(e) => say!(
            "warning: {e}; {id} runs whatever version is newest until you `gatehouse pin {id}`"
        ),
    }
}

/// The config file that counts: the running hub's, else the one given, else the platform's.
pub async fn config_path(
    client: &ControlClient,
    given: Option<&std::path::Path>,
) -> std::path::PathBuf {
    match client
        .request::<Option<std::path::PathBuf>>(&gatehouse::control::Request::ConfigPath)
        .await
    {
        Ok(Some(p)) => p,
        _ => given
            .map(std::path::Path::to_path_buf)
            .unwrap_or_else(gatehouse::config::default_config_path),
    }
}

/// The supply-chain cool-down (`registry.min_age_days`) of the config that counts.
pub async fn min_age_days(client: &ControlClient, given: Option<&std::path::Path>) -> u64 {
    let path = config_path(client, given).await;
    gatehouse::config::Config::load(&path)
        .map(|c| c.registry.min_age_days())
        .unwrap_or(gatehouse::config::DEFAULT_MIN_AGE_DAYS)
}
