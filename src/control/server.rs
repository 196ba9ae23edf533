//! The hub's side of the control socket: binding it (0600 in a 0700 dir, refusing to start when
//! another hub answers on it) and serving one request per connection.

use std::path::{Path, PathBuf};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::{write_line, ControlError, ErrorKind, GatewayInfo, Request, Response};
use crate::hub::{HubError, HubHandle};
use crate::supervisor::Followed;

/// The longest deny reason kept (it goes to the client and into the activity log).
pub const MAX_REASON_CHARS: usize = 1000;

/// Control connections served at once (each CLI verb is one; `logs --follow` keeps its own).
const MAX_CONNECTIONS: usize = 128;

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
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(bind_err)?;
            }
            // A directory another user owns or can write could hold their socket, answering
            // our CLI (and `gatehouse connect`) with whatever they like.
            crate::private::check_private_dir(dir).map_err(ControlError::Unsafe)?;
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

    /// Where the socket is.
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
        // A client whose environment lost XDG_RUNTIME_DIR finds the socket by this pointer.
        let pointer = super::locate::advertise(&self.path);
        let mut conns = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) if conns.len() >= MAX_CONNECTIONS => {
                        tracing::warn!("{MAX_CONNECTIONS} control connections are open; one more was closed");
                        drop(stream);
                    }
                    Ok((stream, _)) => {
                        let caller = caller(&stream);
                        let hub = hub.clone();
                        let stop = shutdown.clone();
                        let gw = gateway.clone();
                        conns.spawn(async move { handle_conn(stream, hub, gw, stop, caller).await });
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "control socket accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                },
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        }
        conns.shutdown().await;
        if let Some(pointer) = pointer {
            super::locate::withdraw(&pointer, &self.path);
        }
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
    caller: Option<String>,
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
                &Response::err(ErrorKind::BadRequest, format!("unreadable request: {e}")),
            )
            .await;
            return;
        }
    };
    match req {
        // The two answers that stream: each keeps the connection.
        Request::AuthLogin { id } => sign_in(&mut w, &hub, &id, &stop).await,
        Request::Logs { id, follow, lines } => logs(&mut w, &hub, id, follow, lines, &stop).await,
        req => {
            let resp = answer(req, &hub, gateway, caller).await;
            let _ = write_line(&mut w, &resp).await;
        }
    }
}

/// One line per request: the one answer of every request that is answered once.
#[cfg(unix)]
async fn answer(
    req: Request,
    hub: &HubHandle,
    gateway: Option<GatewayInfo>,
    caller: Option<String>,
) -> Response {
    use crate::approval::{Answer, Scope};
    match req {
        Request::Status => Response::ok(hub.status()),
        Request::Start { id } => done(hub.start_server(&id).await, hub, &id),
        Request::Stop { id } => done(hub.stop_server(&id).await, hub, &id),
        Request::Restart { id } => done(hub.restart_server(&id).await, hub, &id),
        Request::Tools { id, client } => reply(hub.tools_for(id.as_deref(), client.as_deref())),
        Request::Gateway { client } => gateway_for(hub, gateway, client.as_deref()),
        Request::Clients => Response::ok(hub.clients()),
        Request::SaveClient { id, servers } => {
            then(hub.set_client_servers(&id, servers).await, || hub.clients())
        }
        Request::RemoveClient { id } => then(hub.remove_client(&id).await, || hub.clients()),
        Request::RotateClientToken { id } => {
            then(hub.rotate_client_token(&id).await.map(drop), || {
                hub.clients()
            })
        }
        Request::Approvals => Response::ok(readable(hub.approvals().pending())),
        Request::Changes => Response::ok(hub.approvals().changes()),
        Request::Pins => Response::ok(hub.approvals().pins()),
        Request::Grants => Response::ok(hub.approvals().grants()),
        Request::Revoke { grant } => revoke(hub, &grant),
        Request::Secrets => Response::ok(hub.secret_names()),
        Request::SecretChanged { name } => Response::ok(hub.secret_changed(&name).await),
        Request::Activity {
            limit,
            server,
            client,
        } => activity(hub, limit, server, client).await,
        Request::RulesTest(scope) => reply(hub.rules_test(scope).await),
        Request::Rules => Response::ok(hub.rules()),
        Request::AddRule {
            server,
            tool,
            client,
            rule,
        } => reply(hub.add_rule(&server, &tool, client.as_deref(), rule).await),
        Request::RemoveRule { at, rule } => then(hub.remove_rule(&at, rule).await, || hub.rules()),
        Request::Approve { id, scope, digest } => decide(
            hub,
            &id,
            digest,
            Answer::Allow(scope.unwrap_or(Scope::Once)),
            caller,
        ),
        // The reason goes to the client in its error and into the activity log: bounded.
        Request::Deny { id, reason, digest } => {
            let reason = reason.map(|r| crate::text::cut(&r, MAX_REASON_CHARS));
            decide(hub, &id, digest, Answer::Deny(reason), caller)
        }
        Request::Forget { target } => reply(
            hub.forget(&target)
                .map(|forgotten| super::Forgotten { forgotten }),
        ),
        Request::SaveServer {
            original,
            id,
            entry,
        } => done(
            hub.save_server(original.as_deref(), &id, &entry).await,
            hub,
            &id,
        ),
        Request::RemoveServer { id } => then(hub.remove_server(&id).await, || hub.status()),
        Request::SetEnabled { id, enabled } => done(hub.set_enabled(&id, enabled).await, hub, &id),
        Request::RefreshTools { id } => reply(hub.refresh_tools(&id).await),
        Request::AuthLogout { id } => reply(
            hub.sign_out(&id)
                .await
                .map(|revoked| super::SignedOut { revoked }),
        ),
        Request::ConfigPath => Response::ok(hub.config_path()),
        Request::StorePath => Response::ok(hub.store().map(|s| s.root().to_owned())),
        Request::Reload => then(hub.reload().await, || hub.status()),
        Request::ClientFiles => Response::ok(hub.client_file_alerts()),
        Request::RestoreClientFile { path } => {
            said(blocking(hub, move |h| h.restore_client_file(&path)).await)
        }
        Request::AckClientFile { path } => {
            said(blocking(hub, move |h| h.ack_client_file(&path)).await)
        }
        Request::WriteClientEntry {
            path,
            client,
            entry,
            managed,
        } => said(
            blocking(hub, move |h| {
                let kind = crate::clients::ClientKind::parse(&client)?;
                h.write_client_entry(&path, kind, &entry, &managed)
            })
            .await,
        ),
        Request::AuthLogin { .. } | Request::Logs { .. } => Response::err(
            ErrorKind::BadRequest,
            "this request streams its answer on its own connection".into(),
        ),
    }
}

/// A file-touching hub call, off the async threads.
async fn blocking<T: Send + 'static>(
    hub: &HubHandle,
    f: impl FnOnce(&HubHandle) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let hub = hub.clone();
    tokio::task::spawn_blocking(move || f(&hub))
        .await
        .unwrap_or_else(|e| Err(format!("the hub's task ended: {e}")))
}

/// A result in words as the answer.
fn said<T: serde::Serialize>(r: Result<T, String>) -> Response {
    match r {
        Ok(t) => Response::ok(t),
        Err(e) => Response::err(ErrorKind::Other, e),
    }
}

/// A hub call's result as the answer.
fn reply<T: serde::Serialize>(r: Result<T, HubError>) -> Response {
    match r {
        Ok(t) => Response::ok(t),
        Err(e) => Response::from_hub(e),
    }
}

/// A change's outcome answered with what it changed (`after`), or the refusal.
fn then<T: serde::Serialize>(r: Result<(), HubError>, after: impl FnOnce() -> T) -> Response {
    reply(r.map(|()| after()))
}

/// The gateway's address and the token of the profile asked for (the gateway token's by default).
fn gateway_for(hub: &HubHandle, gateway: Option<GatewayInfo>, client: Option<&str>) -> Response {
    let Some(g) = gateway else {
        return Response::err(
            ErrorKind::NoGateway,
            "this hub serves one client on stdio and has no HTTP endpoint".into(),
        );
    };
    match hub.profile_token(client) {
        Ok(None) => Response::ok(g),
        Ok(Some(token)) => Response::ok(GatewayInfo { url: g.url, token }),
        Err(e) => Response::from_hub(e),
    }
}

fn revoke(hub: &HubHandle, grant: &crate::approval::Grant) -> Response {
    if hub.approvals().revoke(grant) {
        Response::ok(hub.approvals().grants())
    } else {
        Response::err(
            ErrorKind::UnknownApproval,
            "no such remembered answer (it may have been revoked already)".into(),
        )
    }
}

async fn activity(
    hub: &HubHandle,
    limit: Option<usize>,
    server: Option<String>,
    client: Option<String>,
) -> Response {
    match hub
        .activity()
        .recent_of(limit.unwrap_or(50), server, client)
        .await
    {
        Ok(rows) => Response::ok(rows),
        Err(e) => Response::err(ErrorKind::Activity, e),
    }
}

/// The person's answer from the CLI, kept with the process that gave it.
fn decide(
    hub: &HubHandle,
    id: &str,
    digest: Option<String>,
    answer: crate::approval::Answer,
    caller: Option<String>,
) -> Response {
    // A held change to what a server says: approved (it becomes the pin) or denied.
    if id.starts_with("chg-") {
        let allow = matches!(answer, crate::approval::Answer::Allow(_));
        return match hub.approvals().answer_change(id, allow) {
            Ok(c) => Response::ok(c),
            Err(e) => Response::err(ErrorKind::UnknownApproval, e.to_string()),
        };
    }
    let answered = hub.approvals().answer_via(
        id,
        digest.as_deref(),
        answer,
        crate::approval::Decider::Cli,
        caller,
    );
    match answered {
        Ok(r) => Response::ok(r),
        Err(e) => Response::err(ErrorKind::UnknownApproval, e.to_string()),
    }
}

/// `auth login`: the authorization URL at once, then the outcome when the browser is done.
#[cfg(unix)]
async fn sign_in<W: tokio::io::AsyncWrite + Unpin>(
    w: &mut W,
    hub: &HubHandle,
    id: &str,
    stop: &CancellationToken,
) {
    let started = match hub.sign_in(id).await {
        Ok(s) => s,
        Err(e) => {
            let _ = write_line(w, &Response::from_hub(e)).await;
            return;
        }
    };
    if write_line(w, &Response::ok(&started)).await.is_err() {
        return;
    }
    let outcome = tokio::select! {
        _ = stop.cancelled() => return,
        r = hub.sign_in_wait(id) => r,
    };
    let line = match outcome {
        Ok(()) => super::SignInOutcome {
            ok: true,
            error: None,
        },
        Err(e) => super::SignInOutcome {
            ok: false,
            error: Some(e.to_string()),
        },
    };
    let _ = write_line(w, &line).await;
}

/// `logs`: the lines kept, then (with `follow`) each new one, until the client goes.
#[cfg(unix)]
async fn logs<W: tokio::io::AsyncWrite + Unpin>(
    w: &mut W,
    hub: &HubHandle,
    id: String,
    follow: bool,
    n: Option<usize>,
    stop: &CancellationToken,
) {
    let server = match hub.server(&id) {
        Ok(s) => s,
        Err(e) => {
            let _ = write_line(w, &Response::from_hub(e)).await;
            return;
        }
    };
    let mut follower = server.follow_logs(n, hub.bus());
    let snapshot = std::mem::take(&mut follower.snapshot);
    if write_line(w, &Response::ok(&snapshot)).await.is_err() || !follow {
        return;
    }
    loop {
        let next = tokio::select! {
            _ = stop.cancelled() => return,
            next = follower.next() => next,
        };
        let line = match next {
            Some(Followed::Line(line)) => line,
            Some(Followed::Skipped(n)) => crate::logs::LogLine {
                server: id.clone(),
                stream: crate::logs::LogStream::Gatehouse,
                time_ms: crate::logs::now_ms(),
                line: format!("({n} log lines skipped: the reader fell behind)"),
            },
            None => return,
        };
        if write_line(w, &line).await.is_err() {
            return;
        }
    }
}

/// Who is on the other end of a control connection: `pid N: /path/to/executable` (from
/// SO_PEERCRED and `/proc`), kept with any approval it gives.
#[cfg(unix)]
fn caller(stream: &tokio::net::UnixStream) -> Option<String> {
    let pid = stream.peer_cred().ok()?.pid()?;
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "executable unknown".to_owned());
    Some(format!("pid {pid}: {exe}"))
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

/// Held calls as a client can read every one of them: a call whose arguments no reader could
/// take (none is held so today: the gateway refuses what it cannot read) is listed with a note
/// in their place, so it can still be seen and denied, and never makes the whole list
/// unreadable.
fn readable(
    mut pending: Vec<crate::approval::ApprovalRequest>,
) -> Vec<crate::approval::ApprovalRequest> {
    for r in &mut pending {
        if crate::arguments::read(Some(r.arguments.get())).is_err() {
            let note = serde_json::json!({"(unreadable)": "these arguments cannot be shown; deny the call"});
            if let Ok(raw) = serde_json::value::to_raw_value(&note) {
                r.arguments = raw;
            }
        }
    }
    pending
}
