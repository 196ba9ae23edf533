//! What the app holds while it runs: the service (hub + gateway + control socket) once started,
//! the options it was started with, and the log followers the UI opened.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use gatehouse::control::GatewayInfo;
use gatehouse::secrets::KeychainStore;
use gatehouse::service::{Service, ServiceOptions};
use gatehouse::HubHandle;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::error::CommandError;

pub enum Phase {
    Starting,
    Running(Box<Service>),
    /// Start failed (bad config, another hub running, port taken): the message says what to fix.
    Failed(String),
    Stopped,
}

pub struct AppState {
    pub opts: ServiceOptions,
    pub keychain: KeychainStore,
    /// Guards reading or swapping the phase; never held across `.await`.
    phase: Mutex<Phase>,
    /// Log tails the UI follows, by follower id; each task ends when its token is cancelled.
    /// Guards one insert or removal.
    followers: Mutex<HashMap<u64, CancellationToken>>,
    next_follower: AtomicU64,
    pub quitting: AtomicBool,
    /// A snippet of several servers pasted into the Add form, kept in memory only (it may hold
    /// credentials) for the Import view to review. Guards one swap or read.
    pub pasted: Mutex<Option<String>>,
}

/// The name of a phase, as the UI branches on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseName {
    Starting,
    Running,
    Failed,
    Stopped,
}

/// The app's phase as the UI sees it.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseView {
    pub phase: PhaseName,
    pub error: Option<String>,
    pub config_path: String,
    pub data_dir: String,
    pub control_path: String,
    pub gateway_url: Option<String>,
}

impl AppState {
    pub fn new(opts: ServiceOptions, keychain: KeychainStore) -> Self {
        AppState {
            opts,
            keychain,
            phase: Mutex::new(Phase::Starting),
            followers: Mutex::new(HashMap::new()),
            next_follower: AtomicU64::new(1),
            quitting: AtomicBool::new(false),
            pasted: Mutex::new(None),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Phase> {
        gatehouse::sync::lock(&self.phase)
    }

    pub fn set_phase(&self, phase: Phase) {
        *self.lock() = phase;
    }

    /// Takes the running service out (to stop it); the phase becomes `Stopped`.
    pub fn take_service(&self) -> Option<Service> {
        match std::mem::replace(&mut *self.lock(), Phase::Stopped) {
            Phase::Running(s) => Some(*s),
            _ => None,
        }
    }

    pub fn is_starting(&self) -> bool {
        matches!(*self.lock(), Phase::Starting)
    }

    pub fn hub(&self) -> Result<HubHandle, CommandError> {
        match &*self.lock() {
            Phase::Running(s) => Ok(s.hub().clone()),
            Phase::Starting => Err(CommandError::not_ready("Gatehouse is still starting")),
            Phase::Failed(e) => Err(CommandError::not_ready(e.clone())),
            Phase::Stopped => Err(CommandError::not_ready("Gatehouse is quitting")),
        }
    }

    /// The person's answer to a held call, from any of the app's surfaces (the window's modal,
    /// the native prompt, a notification's action): `once`, `session`, `always` or `deny`.
    /// `digest` is the digest of the call that surface showed: an answer to a call that is not
    /// exactly the one shown is refused (the call keeps waiting).
    pub fn answer(
        &self,
        id: &str,
        digest: &str,
        choice: Choice,
        reason: Option<String>,
    ) -> Result<(), CommandError> {
        let answer = choice.answer(reason);
        self.hub()?
            .approvals()
            .answer_via(
                id,
                Some(digest),
                answer,
                gatehouse::approval::Decider::Ui,
                None,
            )
            .map(|_| ())
            .map_err(CommandError::failed)
    }

    /// The running gateway (for what clients are connected now).
    pub fn gateway(&self) -> Option<gatehouse::gateway::Gateway> {
        match &*self.lock() {
            Phase::Running(s) => Some(s.gateway().clone()),
            _ => None,
        }
    }

    pub fn gateway_info(&self) -> Option<GatewayInfo> {
        match &*self.lock() {
            Phase::Running(s) => s.gateway_info().cloned(),
            _ => None,
        }
    }

    pub fn view(&self) -> PhaseView {
        let (phase, error, gateway_url) = match &*self.lock() {
            Phase::Starting => (PhaseName::Starting, None, None),
            Phase::Running(s) => (
                PhaseName::Running,
                None,
                s.gateway_info().map(|i| i.url.clone()),
            ),
            Phase::Failed(e) => (PhaseName::Failed, Some(e.clone()), None),
            Phase::Stopped => (PhaseName::Stopped, None, None),
        };
        PhaseView {
            phase,
            error,
            config_path: self.opts.config_path.display().to_string(),
            data_dir: self.opts.data_dir.display().to_string(),
            control_path: self.opts.control_path.display().to_string(),
            gateway_url,
        }
    }

    pub fn add_follower(&self) -> (u64, CancellationToken) {
        let id = self.next_follower.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        gatehouse::sync::lock(&self.followers).insert(id, token.clone());
        (id, token)
    }

    pub fn remove_follower(&self, id: u64) {
        if let Some(t) = gatehouse::sync::lock(&self.followers).remove(&id) {
            t.cancel();
        }
    }

    pub fn stop_followers(&self) {
        let all: Vec<CancellationToken> = gatehouse::sync::lock(&self.followers)
            .drain()
            .map(|(_, t)| t)
            .collect();
        for t in all {
            t.cancel();
        }
    }
}

/// What the person chose in the app — the modal's buttons, the native prompt's, a
/// notification's — typed where it arrives (`once`, `session`, `always`, `exact`,
/// `exact-always`, `deny` on the wire; any other word is refused by the command's own
/// deserialiser).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    Once,
    Session,
    Always,
    /// This exact call (the same arguments), for this session.
    Exact,
    /// This exact call, with this definition, until revoked.
    #[serde(rename = "exact-always")]
    ExactAlways,
    Deny,
}

impl Choice {
    /// The core's answer: allow for a scope, or deny with the reason given (else the app's own).
    pub fn answer(self, reason: Option<String>) -> gatehouse::approval::Answer {
        use gatehouse::approval::{Answer, Scope};
        match self {
            Choice::Once => Answer::Allow(Scope::Once),
            Choice::Session => Answer::Allow(Scope::Session),
            Choice::Always => Answer::Allow(Scope::Always),
            Choice::Exact => Answer::Allow(Scope::Exact),
            Choice::ExactAlways => Answer::Allow(Scope::ExactAlways),
            Choice::Deny => Answer::Deny(Some(
                reason
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or_else(|| "denied in the Gatehouse app".into()),
            )),
        }
    }
}
