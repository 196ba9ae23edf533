//! What every server's actor shares with the hub: the event bus, where secrets come from, the
//! redactions, where logs go, the timing knobs, and how sessions are launched.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::events::EventBus;
use crate::secrets::{Redactions, SecretSource};

use super::launch::{Launcher, SystemLauncher};

/// Timing knobs. Production uses [`Tuning::default`]; tests and benches shrink them.
#[derive(Debug, Clone)]
pub struct Tuning {
    /// The first restart waits this long; each failure in a row doubles it.
    pub backoff_base: Duration,
    /// The longest wait between restarts.
    pub backoff_max: Duration,
    /// A server that ran this long before dying starts its failure count afresh.
    pub reset_after: Duration,
    /// Failures in a row before a server is `failed` and left alone.
    pub max_failures: u32,
    /// Each step of the stop sequence (stdin closed → TERM → KILL) waits this long.
    pub stop_grace: Duration,
}

impl Default for Tuning {
    /// 1 s doubling to 60 s (±20 % jitter), reset after 60 s running, `failed` after 5 failures
    /// in a row, 2 s per step of the stop sequence.
    fn default() -> Self {
        Tuning {
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            reset_after: Duration::from_secs(60),
            max_failures: 5,
            stop_grace: Duration::from_secs(2),
        }
    }
}

/// What every actor shares with the hub.
pub struct Context {
    /// Status changes and log lines go out here.
    pub bus: EventBus,
    /// Where `{"secret": …}` references get their values (at spawn/connect time only).
    pub secrets: Arc<dyn SecretSource>,
    /// Resolved secret values, masked in everything stored or shown.
    pub redactions: Arc<Redactions>,
    /// Where per-server log files go (`None`: memory only).
    pub log_dir: Option<PathBuf>,
    /// Timing knobs.
    pub tuning: Tuning,
    /// The gateway's ports: a server reaching one of them on loopback is Gatehouse itself.
    pub gateway_ports: Vec<u16>,
    pub(crate) launcher: Arc<dyn Launcher>,
    /// Remote servers' sign-ins and tokens.
    pub oauth: Arc<crate::oauth::Manager>,
    /// What no sandboxed server may read, and where each one's own places are made.
    pub sandbox: super::confine::SandboxRoots,
    /// Where each server's last known tool definitions are kept (`None`: nowhere; an
    /// on-demand server then starts once per run to learn them).
    pub known_tools_dir: Option<PathBuf>,
}

impl Context {
    /// A context that launches real processes and remote connections.
    pub fn new(
        bus: EventBus,
        secrets: Arc<dyn SecretSource>,
        redactions: Arc<Redactions>,
        log_dir: Option<PathBuf>,
        tuning: Tuning,
        gateway_ports: Vec<u16>,
        oauth: (Arc<dyn crate::oauth::Vault>, Option<std::ffi::OsString>),
    ) -> Context {
        Context {
            oauth: Arc::new(crate::oauth::Manager::with_browser(
                oauth.0,
                redactions.clone(),
                oauth.1,
            )),
            bus,
            secrets,
            redactions,
            log_dir,
            tuning,
            gateway_ports,
            launcher: Arc::new(SystemLauncher),
            sandbox: super::confine::SandboxRoots::default(),
            known_tools_dir: None,
        }
    }
}
