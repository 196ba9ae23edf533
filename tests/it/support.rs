//! Test harness: start a hub in-process on a temp dir, wait for states, inspect the process table.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant as StdInstant;
use std::time::{Duration, Instant};

use gatehouse::control::{ControlClient, GatewayInfo, Request};

use gatehouse::config::Config;
use gatehouse::supervisor::{ServerHandle, Tuning};
use gatehouse::{Hub, HubHandle, HubOptions, ServerStatus, State};

pub const FIXTURE: &str = env!("CARGO_BIN_EXE_gatehouse-fixture");
pub const GATEHOUSE: &str = env!("CARGO_BIN_EXE_gatehouse");
/// How many tools the fixture lists without `--tools N` (src/bin/fixture.rs, `tools()`).
pub const FIXTURE_TOOLS: usize = 13;

/// Short timings so lifecycle tests take seconds, not minutes. The real numbers are unit-tested.
pub fn fast_tuning() -> Tuning {
    Tuning {
        backoff_base: Duration::from_millis(50),
        backoff_max: Duration::from_millis(400),
        reset_after: Duration::from_secs(60),
        max_failures: 5,
        stop_grace: Duration::from_millis(400),
    }
}

pub struct TestHub {
    pub hub: HubHandle,
    pub dir: tempfile::TempDir,
}

impl TestHub {
    pub fn start(config_json: &str) -> TestHub {
        Self::start_with(config_json, fast_tuning())
    }

    pub fn start_with(config_json: &str, tuning: Tuning) -> TestHub {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::parse(config_json, std::path::Path::new("test.json")).unwrap();
        let mut opts = HubOptions::new(dir.path().to_owned());
        opts.tuning = tuning;
        TestHub {
            hub: Hub::start(config, opts),
            dir,
        }
    }

    pub fn server(&self, id: &str) -> ServerHandle {
        self.hub.server(id).unwrap()
    }
}

/// A fixture server entry with the given flags.
pub fn fixture(flags: &[&str]) -> serde_json::Value {
    serde_json::json!({"command": FIXTURE, "args": flags})
}

/// The same entry with its sandbox opened for writing in `dir` (where a test has it leave
/// marks: pid files, touched files).
pub fn writes_in(server: serde_json::Value, dir: &Path) -> serde_json::Value {
    with(server, "sandbox", serde_json::json!({"write": [dir]}))
}

/// The same entry with one more key set.
pub fn with(
    mut server: serde_json::Value,
    key: &str,
    value: serde_json::Value,
) -> serde_json::Value {
    server[key] = value;
    server
}

/// A config text holding the given servers.
pub fn config(servers: &[(&str, serde_json::Value)]) -> String {
    let map: serde_json::Map<String, serde_json::Value> = servers
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    serde_json::json!({ "servers": map }).to_string()
}

/// Waits until the server's status satisfies `pred`; panics with the last status on timeout.
pub async fn wait_for(
    h: &ServerHandle,
    what: &str,
    limit: Duration,
    pred: impl Fn(&ServerStatus) -> bool,
) -> ServerStatus {
    let mut rx = h.watch_status();
    let res = tokio::time::timeout(limit, async {
        loop {
            {
                let s = rx.borrow_and_update();
                if pred(&s) {
                    return s.clone();
                }
            }
            if rx.changed().await.is_err() {
                panic!("status channel closed while waiting for {what}");
            }
        }
    })
    .await;
    match res {
        Ok(s) => s,
        Err(_) => panic!(
            "timed out waiting for {what}; last status: {:?}",
            h.status()
        ),
    }
}

pub async fn wait_state(h: &ServerHandle, state: State, limit: Duration) -> ServerStatus {
    wait_for(h, state.as_str(), limit, |s| s.state == state).await
}

/// Waits until the server has a child process (starting or running with a pid); returns the pid.
pub async fn wait_spawned(h: &ServerHandle, limit: Duration) -> u32 {
    let s = wait_for(h, "a spawned child", limit, |s| {
        matches!(s.state, State::Starting | State::Running) && s.pid.is_some()
    })
    .await;
    s.pid.unwrap_or_default()
}

/// Live (non-zombie) members of a process group, from the process table.
pub fn group_members(pgid: u32) -> Vec<u32> {
    gatehouse::supervisor::process::group_members(pgid)
}

/// Waits (bounded) until the process group has no live member; returns what is left.
pub async fn group_gone(pgid: u32, limit: Duration) -> Vec<u32> {
    let deadline = Instant::now() + limit;
    loop {
        let left = group_members(pgid);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn kill9(pid: u32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
}

/// Calls a tool through the supervisor's raw request path; returns the raw result text.
pub async fn call_tool(
    h: &ServerHandle,
    name: &str,
    args: serde_json::Value,
) -> Result<String, String> {
    let params = serde_json::json!({"name": name, "arguments": args}).to_string();
    let raw = serde_json::value::RawValue::from_string(params).unwrap();
    match h.request("tools/call", Some(&raw)).await {
        Ok(gatehouse::supervisor::Reply::Result(r)) => Ok(r.get().to_owned()),
        Ok(gatehouse::supervisor::Reply::Error(e)) => Err(format!("json-rpc error {}", e.get())),
        Err(e) => Err(e.to_string()),
    }
}

/// A file of the installed peers, which must exist (`make test` installs them).
pub fn peer_bin(rel: &str) -> String {
    let p = peers_dir().join(rel);
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-peers.sh (make test does)",
        p.display()
    );
    p.to_string_lossy().into_owned()
}

/// Where `make test` installed the real peers (PEERS.md).
pub fn peers_dir() -> PathBuf {
    std::env::var_os("GATEHOUSE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dirs_home().join(".cache/gatehouse-peers"))
}

fn dirs_home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

/// A `gatehouse serve` child with its own control socket, data dir and a free port.
pub struct Served {
    pub child: Child,
    pub sock: PathBuf,
    pub log: PathBuf,
    pub info: GatewayInfo,
}

/// A helper process a test started (a stand-in server, a proxy, a follower), killed and reaped
/// however the test ends: left running after a failed assertion, it would hold the test run's
/// output open and the run would never end.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for Reaped {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Reaped {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Served {
    /// The gateway's `HOST:PORT` (for raw sockets).
    pub fn addr(&self) -> String {
        self.info
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = StdInstant::now() + Duration::from_secs(10);
        while StdInstant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
    }
}

pub async fn serve(dir: &Path, config_text: &str, expect_running: &[&str]) -> Served {
    serve_without_env(dir, config_text, expect_running, &[]).await
}

/// Like [`serve`], with some variables removed from the hub's environment.
pub async fn serve_without_env(
    dir: &Path,
    config_text: &str,
    expect_running: &[&str],
    remove: &[&str],
) -> Served {
    serve_env(dir, config_text, expect_running, remove, &[]).await
}

/// `gatehouse serve` of `config_text` (written to `DIR/gatehouse.json`), its data in `DIR/data`,
/// on a free loopback port: the command, for a test to give its environment and spawn.
pub fn serve_command(dir: &Path, config_text: &str) -> Command {
    let cfg = dir.join("gatehouse.json");
    std::fs::write(&cfg, config_text).unwrap();
    let mut c = Command::new(GATEHOUSE);
    c.arg("serve")
        .arg("--config")
        .arg(&cfg)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(["--listen", "127.0.0.1:0"]);
    c
}

/// Like [`serve`], with some variables removed from the hub's environment and some set.
pub async fn serve_env(
    dir: &Path,
    config_text: &str,
    expect_running: &[&str],
    remove: &[&str],
    set: &[(&str, &str)],
) -> Served {
    let mut cmd = serve_command(dir, config_text);
    cmd.envs_remove(remove).envs(set.iter().copied());
    serve_spawned(dir, cmd, expect_running).await
}

/// `gatehouse serve` with at most `nofile` open files (hard and soft: it cannot raise them), so
/// its connection limit is a quarter of that.
pub async fn serve_limited(
    dir: &Path,
    config_text: &str,
    expect_running: &[&str],
    nofile: u32,
) -> Served {
    let inner = serve_command(dir, config_text);
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -n {nofile} && exec \"$0\" \"$@\""))
        .arg(inner.get_program())
        .args(inner.get_args());
    serve_spawned(dir, cmd, expect_running).await
}

/// Runs `cmd` (a `gatehouse serve`) with the control socket and log of `dir`, and waits until
/// its gateway answers and `expect_running` run.
pub async fn serve_spawned(dir: &Path, mut cmd: Command, expect_running: &[&str]) -> Served {
    let sock = dir.join("control.sock");
    cmd.env("GATEHOUSE_CONTROL", &sock);
    serve_at(dir, cmd, expect_running, sock).await
}

/// [`serve_spawned`] for a hub whose control socket is at `sock` by its own choice (the derived
/// path under `XDG_RUNTIME_DIR`, which leaves a pointer for clients without that variable).
pub async fn serve_at(
    dir: &Path,
    mut cmd: Command,
    expect_running: &[&str],
    sock: PathBuf,
) -> Served {
    let log = dir.join("serve.log");
    let child = cmd
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let client = ControlClient::new(sock.clone());
    let deadline = StdInstant::now() + Duration::from_secs(60);
    let info = loop {
        if let Ok(r) = client.call(&Request::Gateway { client: None }).await {
            if let Some(v) = r.result {
                break serde_json::from_value::<GatewayInfo>(v).unwrap();
            }
        }
        assert!(
            StdInstant::now() < deadline,
            "the hub did not come up: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    loop {
        let status = client.call(&Request::Status).await.unwrap().result.unwrap();
        let running = status
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["state"] == "running")
            .filter(|s| expect_running.contains(&s["id"].as_str().unwrap_or("")))
            .count();
        if running == expect_running.len() {
            break;
        }
        assert!(
            StdInstant::now() < deadline,
            "servers not running: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Served {
        child,
        sock,
        log,
        info,
    }
}

/// `Command::env_remove` for several names.
pub trait EnvsRemove {
    fn envs_remove(&mut self, names: &[&str]) -> &mut Self;
}

impl EnvsRemove for Command {
    fn envs_remove(&mut self, names: &[&str]) -> &mut Self {
        for n in names {
            self.env_remove(n);
        }
        self
    }
}

/// `serve --stdio` on `cfg` with a data dir and control socket of its own: the arguments after
/// the binary.
pub fn serve_stdio_args(cfg: &Path, data: &Path, sock: &Path) -> Vec<String> {
    let text = |p: &Path| p.to_string_lossy().into_owned();
    vec![
        "serve".into(),
        "--stdio".into(),
        "--config".into(),
        text(cfg),
        "--data-dir".into(),
        text(data),
        "--control".into(),
        text(sock),
    ]
}

/// Waits (at most 20 s) until something accepts connections on 127.0.0.1:`port`.
pub fn wait_for_port(port: u16, what: &str) {
    let deadline = StdInstant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(StdInstant::now() < deadline, "{what} did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every file under `dir`, recursively (canary searches).
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The one MCP session helper of the integration tests: a 2025 client over Streamable HTTP
/// (`initialize`, then `notifications/initialized`), speaking plain JSON-RPC.
#[derive(Clone)]
pub struct Mcp {
    /// The HTTP client (for requests a test shapes itself).
    pub http: reqwest::Client,
    /// The gateway's URL.
    pub url: String,
    /// The bearer token the session was opened with.
    pub token: String,
    /// `Mcp-Session-Id`.
    pub sid: String,
    /// The `initialize` answer's result.
    pub init: serde_json::Value,
}

impl Mcp {
    /// A session with the served hub's gateway token, as client `name`.
    pub async fn connect(s: &Served, name: &str) -> Mcp {
        Self::connect_to(&s.info, name).await
    }

    /// A session on `info`'s gateway, as client `name`.
    pub async fn connect_to(info: &GatewayInfo, name: &str) -> Mcp {
        let who = serde_json::json!({"name": name, "version": "1"});
        Self::open_with(&info.url, &info.token, who, "2025-11-25").await
    }

    /// A session with `token` (a profile's, or the gateway's), speaking 2025-06-18.
    pub async fn open(url: &str, token: &str) -> Mcp {
        let who = serde_json::json!({"name": "t", "version": "1"});
        Self::open_with(url, token, who, "2025-06-18").await
    }

    /// A session with `token` whose client says it is `client_info`, speaking `version`.
    pub async fn open_with(
        url: &str,
        token: &str,
        client_info: serde_json::Value,
        version: &str,
    ) -> Mcp {
        Self::open_as(url, token, client_info, version, serde_json::json!({})).await
    }

    /// [`Mcp::open_with`], the client declaring `capabilities`.
    pub async fn open_as(
        url: &str,
        token: &str,
        client_info: serde_json::Value,
        version: &str,
        capabilities: serde_json::Value,
    ) -> Mcp {
        let http = gatehouse::http_client_builder().no_proxy().build().unwrap();
        let init = serde_json::json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion": version,"capabilities":capabilities,"clientInfo":client_info}});
        let r = http
            .post(url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let init = last_message(&r.text().await.unwrap())["result"].clone();
        let me = Mcp {
            http,
            url: url.to_owned(),
            token: token.to_owned(),
            sid,
            init,
        };
        let (status, _) = me
            .post_as(
                token,
                serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            )
            .await;
        assert_eq!(status, 202, "notifications/initialized is accepted");
        me
    }

    /// Posts `body` with `token` in this session: the status and the body as text.
    pub async fn post_as(&self, token: &str, body: serde_json::Value) -> (u16, String) {
        self.send(token, body.to_string()).await
    }

    /// Posts `body` in this session: the answer's text.
    pub async fn post(&self, body: serde_json::Value) -> String {
        self.send(&self.token, body.to_string()).await.1
    }

    /// `post_as` on a task of its own (a call that waits for an answer); its body.
    pub fn spawn_post(
        &self,
        token: &str,
        body: serde_json::Value,
    ) -> tokio::task::JoinHandle<String> {
        let (s, token) = (self.clone(), token.to_owned());
        tokio::spawn(async move { s.post_as(&token, body).await.1 })
    }

    /// Posts `body` as it is; the status and the answer's last message (JSON, or SSE `data:`).
    pub async fn raw(&self, body: String) -> (u16, serde_json::Value) {
        let (status, text) = self.send(&self.token, body).await;
        (status, last_message(&text))
    }

    /// One request's final answer.
    pub async fn request(
        &self,
        id: u64,
        method: &str,
        params: serde_json::Value,
    ) -> serde_json::Value {
        let body = serde_json::json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
        self.raw(body.to_string()).await.1
    }

    /// Calls a tool; its final response message (from JSON or the SSE stream).
    pub async fn call(&self, id: u64, tool: &str, args: serde_json::Value) -> serde_json::Value {
        let text = self
            .post(serde_json::json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}}))
            .await;
        messages(&text)
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or(serde_json::Value::Null)
    }

    /// The names of the tools this session sees.
    pub async fn tools(&self) -> Vec<String> {
        let (status, body) = self
            .post_as(
                &self.token,
                serde_json::json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// A POST of `body` in this session, to send and read as the test needs (a stream).
    pub fn builder(&self, body: &serde_json::Value) -> reqwest::RequestBuilder {
        self.builder_as(&self.token, body.to_string())
    }

    fn builder_as(&self, token: &str, body: String) -> reqwest::RequestBuilder {
        self.http
            .post(&self.url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.sid)
            .body(body)
    }

    async fn send(&self, token: &str, body: String) -> (u16, String) {
        let r = self.builder_as(token, body).send().await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }
}

/// A 2026-07-28 client's `tools/call` POST of `tool` to the gateway at `url` with `token`: the
/// headers such a client sends (version, `Mcp-Method`, `Mcp-Name`), the body the caller's.
pub fn modern_tool_post(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    tool: &str,
) -> reqwest::RequestBuilder {
    http.post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
}

#[path = "support/approving.rs"]
mod approving;
#[path = "support/cli.rs"]
mod cli;
#[path = "support/gw.rs"]
mod gw;
#[path = "support/peers.rs"]
mod peers;
#[path = "support/reading.rs"]
mod reading;
#[path = "support/servers.rs"]
mod servers;
pub use approving::*;
pub use cli::*;
pub use gw::*;
pub use peers::*;
pub use reading::*;
pub use servers::*;
