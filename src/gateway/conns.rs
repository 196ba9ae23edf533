//! The gateway's connections: how many are served at once, and who gets a place when they are
//! all taken. A connection that has not yet shown a valid token holds its place only until a new
//! one needs it — the oldest such idle socket is ended first — so sockets opened without a token,
//! however many and however often reopened, never lock out a client that has one. A connection
//! that shows a token is its client profile's, and no profile holds more than three quarters of
//! the places (`PROFILE_SHARE`): whatever one client does, another always finds a place.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use axum::response::Response;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::sync::lock;

/// How long a client may take to send a request's headers (also how long an idle connection is
/// kept between requests: waiting for the next request is waiting for its headers).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The share of the connections one client profile may hold: three quarters (HTTP/1.1 carries
/// one request at a time, so this bounds each profile's requests in flight too).
pub const PROFILE_SHARE: (usize, usize) = (3, 4);

/// One connection as its requests see it: whether it showed a token, and whose.
struct Mark {
    shown: AtomicBool,
    /// Whether any byte of a request has arrived on it.
    heard: Arc<AtomicBool>,
    /// When it was accepted: one that is sending a request and younger than [`GRACE`] is never
    /// ended for a newcomer.
    since: std::time::Instant,
    profile: Mutex<Option<String>>,
}

/// How many connections each client profile holds.
struct Holders {
    share: usize,
    held: Mutex<HashMap<String, usize>>,
}

/// Set on a connection's requests: the handler marks it once a request showed a valid token.
#[derive(Clone)]
pub struct Shown {
    mark: Arc<Mark>,
    holders: Arc<Holders>,
}

impl Shown {
    /// This connection has shown client profile `profile`'s token (`default` for the gateway
    /// token's) and is that profile's from now on — unless the profile holds its share of the
    /// connections already: then `Err` with the share, and the connection should be closed.
    pub fn mark(&self, profile: &str) -> Result<(), usize> {
        let mut mine = lock(&self.mark.profile);
        if mine.is_none() {
            let mut held = lock(&self.holders.held);
            let n = held.entry(profile.to_owned()).or_insert(0);
            if *n >= self.holders.share {
                return Err(self.holders.share);
            }
            *n += 1;
            *mine = Some(profile.to_owned());
        }
        self.mark.shown.store(true, Ordering::Relaxed);
        Ok(())
    }
}

/// Gives a connection's place back to its profile's count when the connection ends.
struct Release(Shown);

impl Drop for Release {
    fn drop(&mut self) {
        if let Some(p) = lock(&self.0.mark.profile).take() {
            let mut held = lock(&self.0.holders.held);
            if let Some(n) = held.get_mut(&p) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    held.remove(&p);
                }
            }
        }
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
    shown: Arc<Mark>,
    end: CancellationToken,
    alive: Weak<()>,
}

/// How long a new connection waits for the place an evicted one gives up.
const HANDOVER: Duration = Duration::from_millis(500);

/// How long a connection that is sending its first request has to show a token before its place
/// may go to a newer one: a client's connection is never ended between its first bytes and its
/// token being read, however fast sockets without a token arrive after it. A socket that has
/// sent nothing holds its place only until a newcomer needs it — after [`QUIET`].
pub const GRACE: Duration = Duration::from_secs(3);

/// How long a new connection keeps its place whatever it sends: its first bytes may still be
/// unread (its task not yet run on a busy machine — under the load run's attack on two cores,
/// 250 ms was not always enough, and a client's first request was reset).
pub const QUIET: Duration = Duration::from_secs(1);

/// How long a newcomer waits for a place when none can be given up yet (connections behind it
/// wait in the listen backlog meanwhile).
pub const PLACE_WAIT: Duration = Duration::from_secs(5);

impl Mark {
    /// Whether its place may go to a newcomer: it has shown no token, and it has been quiet
    /// for [`QUIET`] or at its first request for [`GRACE`].
    fn yields(&self) -> bool {
        let age = self.since.elapsed();
        !self.shown.load(Ordering::Relaxed)
            && (age >= GRACE || (age >= QUIET && !self.heard.load(Ordering::Relaxed)))
    }
}

/// A place for a newcomer: a free one, else the oldest that [`Mark::yields`] (ended for it),
/// waiting at most [`PLACE_WAIT`] for one — less when the gateway shuts down; `None` when none
/// came.
async fn place_for(
    places: &mut VecDeque<Place>,
    permits: &Arc<tokio::sync::Semaphore>,
    shutdown: &CancellationToken,
) -> Option<tokio::sync::OwnedSemaphorePermit> {
    let until = tokio::time::Instant::now() + PLACE_WAIT;
    loop {
        if let Ok(p) = permits.clone().try_acquire_owned() {
            return Some(p);
        }
        places.retain(|p| p.alive.strong_count() > 0);
        if let Some(i) = places.iter().position(|p| p.shown.yields()) {
            if let Some(p) = places.remove(i) {
                p.end.cancel();
            }
            return tokio::time::timeout(HANDOVER, permits.clone().acquire_owned())
                .await
                .ok()
                .and_then(Result::ok);
        }
        let now = tokio::time::Instant::now();
        if now >= until || shutdown.is_cancelled() {
            return None;
        }
        let tick = (until - now).min(Duration::from_millis(50));
        if let Ok(Ok(p)) = tokio::time::timeout(tick, permits.clone().acquire_owned()).await {
            return Some(p);
        }
    }
}

/// A connection's stream, noting when the first bytes of a request arrive.
struct Heard {
    inner: tokio::net::TcpStream,
    heard: Arc<AtomicBool>,
}

impl tokio::io::AsyncRead for Heard {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.heard.store(true, Ordering::Relaxed);
        }
        r
    }
}

impl tokio::io::AsyncWrite for Heard {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Accepts connections up to [`connection_limit`] at once and serves each with a header timeout,
/// until `shutdown`. When every place is taken, the oldest connection that has not shown a
/// token is ended for the new one; when every connection has shown one, the new one is closed.
/// Each request goes to `handler` with its connection's [`Shown`] — straight from hyper, no
/// router or layer between (each cost allocations on every request).
pub async fn accept_loop<H, F>(listener: TcpListener, handler: H, shutdown: CancellationToken)
where
    H: Fn(Request<Body>, Shown) -> F + Clone + Send + Sync + 'static,
    F: std::future::Future<Output = Response> + Send + 'static,
{
    let limit = connection_limit();
    let permits = Arc::new(tokio::sync::Semaphore::new(limit));
    let holders = Arc::new(Holders {
        share: (limit * PROFILE_SHARE.0 / PROFILE_SHARE.1).max(1),
        held: Mutex::new(HashMap::new()),
    });
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
        let permit = place_for(&mut places, &permits, &shutdown).await;
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
        let heard = Arc::new(AtomicBool::new(false));
        let mark = Arc::new(Mark {
            shown: AtomicBool::new(false),
            heard: heard.clone(),
            since: std::time::Instant::now(),
            profile: Mutex::new(None),
        });
        let shown = Shown {
            mark: mark.clone(),
            holders: holders.clone(),
        };
        let end = CancellationToken::new();
        let alive = Arc::new(());
        places.push_back(Place {
            shown: mark,
            end: end.clone(),
            alive: Arc::downgrade(&alive),
        });
        let release = Release(shown.clone());
        let handler = handler.clone();
        let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
            let answer = handler(req.map(Body::new), shown.clone());
            async move { Ok::<_, std::convert::Infallible>(answer.await) }
        });
        let stop = shutdown.clone();
        conns.spawn(async move {
            let _alive = alive;
            let _permit = permit;
            let _release = release;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT);
            let conn = builder.serve_connection(
                hyper_util::rt::TokioIo::new(Heard {
                    inner: stream,
                    heard,
                }),
                service,
            );
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
