//! The gateway's connections: how many are served at once, and who gets a place when they are
//! all taken. A connection that has not yet shown a valid token holds its place only until a new
//! one needs it — the oldest such idle socket is ended first — so sockets opened without a token,
//! however many and however often reopened, never lock out a client that has one.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How long a client may take to send a request's headers (also how long an idle connection is
/// kept between requests: waiting for the next request is waiting for its headers).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Set on a connection's requests: the handler marks it once a request showed a valid token.
#[derive(Clone)]
pub struct Shown(pub Arc<AtomicBool>);

impl Shown {
    /// This connection has shown a valid token.
    pub fn mark(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Connections served at once: a quarter of the file descriptors this process may open (after
/// [`raise_fd_limit`]), between 64 and 1,024, so that a flood of connections can never take the
/// descriptors the control socket, the servers' pipes and the logs need.
pub fn connection_limit() -> usize {
    let soft = fd_limit().unwrap_or(1024);
    (soft / 4).clamp(64, 1024) as usize
}

fn fd_limit() -> Option<u64> {
    #[cfg(unix)]
    return nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .ok()
        .map(|(soft, _)| soft);
    #[cfg(not(unix))]
    None
}

/// Raises this process's soft limit on open files to its hard limit (capped at 65,536): the
/// default 1,024 is easily reached by a hub with many servers and clients.
pub fn raise_fd_limit() {
    #[cfg(unix)]
    {
        use nix::sys::resource::{getrlimit, setrlimit, Resource};
        if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
            let want = hard.min(65_536);
            if want > soft {
                if let Err(e) = setrlimit(Resource::RLIMIT_NOFILE, want, hard) {
                    tracing::debug!(error = %e, "cannot raise the open-files limit");
                }
            }
        }
    }
}

/// A connection as the accept loop remembers it, in arrival order.
struct Place {
    shown: Arc<AtomicBool>,
    end: CancellationToken,
    alive: Weak<()>,
}

/// How long a new connection waits for the place an evicted one gives up.
const HANDOVER: Duration = Duration::from_millis(500);

/// Accepts connections up to [`connection_limit`] at once and serves each with a header timeout,
/// until `shutdown`. When every place is taken, the oldest connection that has not shown a
/// token is ended for the new one; when every connection has shown one, the new one is closed.
pub async fn accept_loop(listener: TcpListener, app: axum::Router, shutdown: CancellationToken) {
    let limit = connection_limit();
    let permits = Arc::new(tokio::sync::Semaphore::new(limit));
    let mut conns = tokio::task::JoinSet::new();
    let mut places: VecDeque<Place> = VecDeque::new();
    let mut refused: u64 = 0;
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => continue,
            a = listener.accept() => a,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors or a transient error: never spin, never stop serving.
                tracing::warn!(error = %e, "gateway accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        places.retain(|p| p.alive.strong_count() > 0);
        let permit = match permits.clone().try_acquire_owned() {
            Ok(p) => Some(p),
            Err(_) => match places.iter().position(|p| !p.shown.load(Ordering::Relaxed)) {
                Some(i) => {
                    if let Some(p) = places.remove(i) {
                        p.end.cancel();
                    }
                    tokio::time::timeout(HANDOVER, permits.clone().acquire_owned())
                        .await
                        .ok()
                        .and_then(Result::ok)
                }
                None => None,
            },
        };
        let Some(permit) = permit else {
            refused += 1;
            if refused.is_power_of_two() {
                tracing::warn!(
                    limit,
                    refused,
                    "too many client connections; new ones are closed until some end"
                );
            }
            drop(stream);
            continue;
        };
        let shown = Arc::new(AtomicBool::new(false));
        let end = CancellationToken::new();
        let alive = Arc::new(());
        places.push_back(Place {
            shown: shown.clone(),
            end: end.clone(),
            alive: Arc::downgrade(&alive),
        });
        let app = app.clone().layer(axum::Extension(Shown(shown)));
        let service = hyper_util::service::TowerToHyperService::new(app);
        let stop = shutdown.clone();
        conns.spawn(async move {
            let _alive = alive;
            let _permit = permit;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT);
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                // Its place went to a newer connection before it showed a token.
                _ = end.cancelled() => {}
                _ = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
                }
            }
        });
    }
    // Connections end with their streams (the gateway's shutdown closes them), bounded.
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    conns.shutdown().await;
}
