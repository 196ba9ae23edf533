//! The control socket: how CLI verbs (and later approvers) talk to a running hub. A Unix socket
//! (mode 0600, in a 0700 dir), one JSON request line per connection, JSON response lines back.
//! Nothing here is reachable with a gateway client token: the socket is a separate, local-user
//! channel.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::events::Event;
use crate::hub::{HubError, HubHandle};

/// Env var that overrides the control socket path.
pub const CONTROL_ENV: &str = "GATEHOUSE_CONTROL";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "verb", rename_all = "snake_case")]
pub enum Request {
    Status,
    Start {
        id: String,
    },
    Stop {
        id: String,
    },
    Restart {
        id: String,
    },
    Logs {
        id: String,
        #[serde(default)]
        follow: bool,
        #[serde(default)]
        lines: Option<usize>,
    },
    Tools {
        #[serde(default)]
        id: Option<String>,
    },
    Reload,
    /// The gateway's URL and bearer token, for `gatehouse connect` (local user only).
    Gateway,
    /// Pending approval requests.
    Approvals,
    Approve {
        id: String,
        #[serde(default)]
        scope: Option<crate::approval::Scope>,
    },
    Deny {
        id: String,
        #[serde(default)]
        reason: Option<String>,
    },
    /// Revoke remembered approvals: `SERVER` or `SERVER__TOOL`.
    Forget {
        target: String,
    },
    /// Secret names the config references, with the servers using each (never values).
    Secrets,
    /// A secret was set or removed: restart the servers that use it.
    SecretChanged {
        name: String,
    },
    /// Recent routed calls, newest first.
    Activity {
        #[serde(default)]
        limit: Option<usize>,
        #[serde(default)]
        server: Option<String>,
    },
}

/// What `gatehouse connect` needs to reach the hub's HTTP endpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GatewayInfo {
    pub url: String,
    pub token: String,
}

/// One response line. `error_kind` lets clients branch (e.g. `unknown_server`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Response {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
}

impl Response {
    fn ok(result: impl Serialize) -> Self {
        Response {
            ok: true,
            result: Some(serde_json::to_value(result).unwrap_or(Value::Null)),
            error: None,
            error_kind: None,
        }
    }
    fn err(kind: &str, message: String) -> Self {
        Response {
            ok: false,
            result: None,
            error: Some(message),
            error_kind: Some(kind.to_owned()),
        }
    }
    fn from_hub(e: HubError) -> Self {
        let kind = match e {
            HubError::UnknownServer { .. } => "unknown_server",
            HubError::ShuttingDown => "shutting_down",
            HubError::Config(_) => "config",
        };
        Response::err(kind, e.to_string())
    }
}

/// The default socket path: `$GATEHOUSE_CONTROL`, else `$XDG_RUNTIME_DIR/gatehouse/control.sock`,
/// else a per-user dir under the temp dir.
pub fn default_socket_path() -> PathBuf {
    if let Some(p) = std::env::var_os(CONTROL_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|p| !p.is_empty()) {
        return PathBuf::from(dir).join("gatehouse").join("control.sock");
    }
    #[cfg(unix)]
    let user = nix::unistd::getuid().as_raw().to_string();
    #[cfg(not(unix))]
    let user = std::env::var("USERNAME").unwrap_or_else(|_| "user".into());
    std::env::temp_dir()
        .join(format!("gatehouse-{user}"))
        .join("control.sock")
}

#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("another Gatehouse hub is already running (control socket {0}); stop it first or pass --control PATH")]
    AlreadyRunning(PathBuf),
    #[error("cannot create the control socket {path}: {source}")]
    Bind {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no Gatehouse hub is running (no control socket at {0}); start one with `gatehouse serve --config PATH` or open the Gatehouse app")]
    NotRunning(PathBuf),
    #[error("lost the connection to the hub at {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the hub sent an unreadable answer: {0}")]
    Protocol(String),
    #[error("the control socket is not supported on this platform yet")]
    Unsupported,
}

/// A bound control socket, not yet serving.
pub struct ControlServer {
    #[cfg(unix)]
    listener: tokio::net::UnixListener,
    path: PathBuf,
}

impl ControlServer {
    /// Binds the socket (0600, in a 0700 dir). A live socket at the path means another hub runs;
    /// a stale one is replaced.
    #[cfg(unix)]
    pub async fn bind(path: &Path) -> Result<ControlServer, ControlError> {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let bind_err = |source| ControlError::Bind {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent() {
            if !dir.exists() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(bind_err)?;
            }
        }
        if path.exists() {
            if tokio::net::UnixStream::connect(path).await.is_ok() {
                return Err(ControlError::AlreadyRunning(path.to_owned()));
            }
            std::fs::remove_file(path).map_err(bind_err)?;
        }
        let listener = tokio::net::UnixListener::bind(path).map_err(bind_err)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(bind_err)?;
        Ok(ControlServer {
            listener,
            path: path.to_owned(),
        })
    }

    #[cfg(not(unix))]
    pub async fn bind(_path: &Path) -> Result<ControlServer, ControlError> {
        Err(ControlError::Unsupported)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Serves until `shutdown` is cancelled, then removes the socket file. Each connection runs
    /// in a task owned by this function and ends with it.
    #[cfg(unix)]
    pub async fn serve(
        self,
        hub: HubHandle,
        gateway: Option<GatewayInfo>,
        shutdown: CancellationToken,
    ) {
        let mut conns = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let hub = hub.clone();
                        let stop = shutdown.clone();
                        let gw = gateway.clone();
                        conns.spawn(async move { handle_conn(stream, hub, gw, stop).await });
                    }
                    Err(e) => tracing::warn!(error = %e, "control socket accept failed"),
                },
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        }
        conns.shutdown().await;
        let _ = std::fs::remove_file(&self.path);
    }

    #[cfg(not(unix))]
    pub async fn serve(
        self,
        _hub: HubHandle,
        _gateway: Option<GatewayInfo>,
        _shutdown: CancellationToken,
    ) {
    }
}

#[cfg(unix)]
async fn handle_conn(
    stream: tokio::net::UnixStream,
    hub: HubHandle,
    gateway: Option<GatewayInfo>,
    stop: CancellationToken,
) {
    let (r, mut w) = stream.into_split();
    let mut lines = BufReader::new(r).lines();
    let line =
        match tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line()).await {
            Ok(Ok(Some(l))) => l,
            _ => return,
        };
    let req: Request = match serde_json::from_str(&line) {
        Ok(r) => r,
        Err(e) => {
            let _ = write_line(
                &mut w,
                &Response::err("bad_request", format!("unreadable request: {e}")),
            )
            .await;
            return;
        }
    };
    let resp = match req {
        Request::Status => Response::ok(hub.status()),
        Request::Start { id } => done(hub.start_server(&id).await, &hub, &id),
        Request::Stop { id } => done(hub.stop_server(&id).await, &hub, &id),
        Request::Restart { id } => done(hub.restart_server(&id).await, &hub, &id),
        Request::Tools { id } => match hub.tools(id.as_deref()) {
            Ok(t) => Response::ok(t),
            Err(e) => Response::from_hub(e),
        },
        Request::Gateway => match gateway {
            Some(g) => Response::ok(g),
            None => Response::err(
                "no_gateway",
                "this hub serves one client on stdio and has no HTTP endpoint".into(),
            ),
        },
        Request::Approvals => Response::ok(hub.approvals().pending()),
        Request::Secrets => Response::ok(hub.secret_users()),
        Request::SecretChanged { name } => Response::ok(hub.secret_changed(&name).await),
        Request::Activity { limit, server } => {
            match hub.activity().recent(limit.unwrap_or(50), server).await {
                Ok(rows) => Response::ok(rows),
                Err(e) => Response::err("activity", e),
            }
        }
        Request::Approve { id, scope } => {
            let scope = scope.unwrap_or(crate::approval::Scope::Once);
            match hub.approvals().answer(
                &id,
                crate::approval::Answer::Allow(scope),
                crate::approval::Decider::Cli,
            ) {
                Ok(r) => Response::ok(r),
                Err(e) => Response::err("unknown_approval", e.to_string()),
            }
        }
        Request::Deny { id, reason } => {
            match hub.approvals().answer(
                &id,
                crate::approval::Answer::Deny(reason),
                crate::approval::Decider::Cli,
            ) {
                Ok(r) => Response::ok(r),
                Err(e) => Response::err("unknown_approval", e.to_string()),
            }
        }
        Request::Forget { target } => {
            let (server, tool) = match crate::naming::split_server(&target) {
                Some((s, t)) => (s.to_owned(), Some(t.to_owned())),
                None => (target.clone(), None),
            };
            match hub.server(&server) {
                Ok(_) => Response::ok(
                    serde_json::json!({"forgotten": hub.approvals().forget(&server, tool.as_deref())}),
                ),
                Err(e) => Response::from_hub(e),
            }
        }
        Request::Reload => match hub.reload().await {
            Ok(()) => Response::ok(hub.status()),
            Err(e) => Response::from_hub(e),
        },
        Request::Logs {
            id,
            follow,
            lines: n,
        } => {
            let server = match hub.server(&id) {
                Ok(s) => s,
                Err(e) => {
                    let _ = write_line(&mut w, &Response::from_hub(e)).await;
                    return;
                }
            };
            // Subscribe before taking the snapshot so no line falls between the two.
            let mut events = hub.events();
            let snapshot = server.logs().tail(n);
            if write_line(&mut w, &Response::ok(&snapshot)).await.is_err() || !follow {
                return;
            }
            let mut seen = snapshot;
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    ev = events.recv() => match ev {
                        Ok(Event::Log(line)) if line.server == id => {
                            // Lines already in the snapshot arrive again on the bus: skip them once.
                            if let Some(pos) = seen.iter().position(|l| *l == line) {
                                seen.drain(..=pos);
                                continue;
                            }
                            seen.clear();
                            if write_line(&mut w, &line).await.is_err() {
                                return;
                            }
                        }
                        Ok(_) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                            let note = serde_json::json!({"server": id, "stream": "gatehouse", "time_ms": crate::logs::now_ms(), "line": format!("({n} log lines skipped: the reader fell behind)")});
                            if write_line(&mut w, &note).await.is_err() {
                                return;
                            }
                        }
                        Err(_) => return,
                    }
                }
            }
        }
    };
    let _ = write_line(&mut w, &resp).await;
}

fn done(r: Result<(), HubError>, hub: &HubHandle, id: &str) -> Response {
    match r {
        Ok(()) => match hub.server(id) {
            Ok(s) => Response::ok(s.status()),
            Err(e) => Response::from_hub(e),
        },
        Err(e) => Response::from_hub(e),
    }
}

async fn write_line<W: tokio::io::AsyncWrite + Unpin>(
    w: &mut W,
    v: &impl Serialize,
) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(v).map_err(std::io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line).await?;
    w.flush().await
}

/// The CLI side: a connection to a running hub.
pub struct ControlClient {
    path: PathBuf,
}

impl ControlClient {
    pub fn new(path: PathBuf) -> Self {
        ControlClient { path }
    }

    /// Sends one request and returns the first response line.
    pub async fn call(&self, req: &Request) -> Result<Response, ControlError> {
        let (mut lines, _w) = self.open(req).await?;
        self.next(&mut lines).await?.ok_or_else(|| {
            ControlError::Protocol("the hub closed the connection without answering".into())
        })
    }

    /// Sends one request and calls `each` for every response line until the hub closes.
    pub async fn stream(
        &self,
        req: &Request,
        mut each: impl FnMut(Value) -> bool,
    ) -> Result<(), ControlError> {
        // `_w` keeps our write half open: the hub sees EOF only when we go away (ends a follow).
        let (mut lines, _w) = self.open(req).await?;
        while let Some(line) = self.next_value(&mut lines).await? {
            if !each(line) {
                break;
            }
        }
        Ok(())
    }

    #[cfg(unix)]
    async fn open(
        &self,
        req: &Request,
    ) -> Result<
        (
            tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
            tokio::net::unix::OwnedWriteHalf,
        ),
        ControlError,
    > {
        let stream = tokio::net::UnixStream::connect(&self.path)
            .await
            .map_err(|_| ControlError::NotRunning(self.path.clone()))?;
        let (r, mut w) = stream.into_split();
        write_line(&mut w, req)
            .await
            .map_err(|source| ControlError::Io {
                path: self.path.clone(),
                source,
            })?;
        Ok((BufReader::new(r).lines(), w))
    }

    #[cfg(not(unix))]
    async fn open(
        &self,
        _req: &Request,
    ) -> Result<(tokio::io::Lines<BufReader<tokio::io::Empty>>, ()), ControlError> {
        Err(ControlError::Unsupported)
    }

    async fn next<R: tokio::io::AsyncBufRead + Unpin>(
        &self,
        lines: &mut tokio::io::Lines<R>,
    ) -> Result<Option<Response>, ControlError> {
        match self.next_value(lines).await? {
            Some(v) => serde_json::from_value(v)
                .map(Some)
                .map_err(|e| ControlError::Protocol(e.to_string())),
            None => Ok(None),
        }
    }

    async fn next_value<R: tokio::io::AsyncBufRead + Unpin>(
        &self,
        lines: &mut tokio::io::Lines<R>,
    ) -> Result<Option<Value>, ControlError> {
        match lines.next_line().await {
            Ok(Some(l)) => serde_json::from_str(&l)
                .map(Some)
                .map_err(|e| ControlError::Protocol(e.to_string())),
            Ok(None) => Ok(None),
            Err(source) => Err(ControlError::Io {
                path: self.path.clone(),
                source,
            }),
        }
    }
}
