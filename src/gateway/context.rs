//! What one client request may touch. [`Gateway::handle`](super::Gateway::handle) makes a
//! [`Cx`] for each request and hands it to the room that answers it: no room sees the gateway
//! itself. Each field is one part of the gateway's state, with its own type and behaviour; a
//! room that needs more (the prompt and resource owners, the upstream subscriptions) is handed
//! that part by the dispatcher, in its signature.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::catalog::{Catalog, Tools};
use super::limits::RateLimits;
use super::names::View;
use super::park::ParkedCalls;
use super::session::{ClientSession, Sessions};
use crate::config::{ClientProfile, Config, ServerId};
use crate::hub::HubHandle;

/// One request's context: who sent it, and the parts of the hub and the gateway it may reach.
/// Cheap to clone (a few `Arc`s): a forwarded call's task keeps its own.
#[derive(Clone)]
pub(super) struct Cx {
    /// Who sent the request: its profile, era, calls in flight and the requests it owes.
    pub session: Arc<ClientSession>,
    /// The hub: its servers, config, approvals, activity log and redactions.
    pub hub: HubHandle,
    /// The tools the gateway exposes: the catalog, rebuilt when a server changed, and the names
    /// each client profile is shown.
    pub tools: Arc<Tools>,
    /// Every client session: who else is connected (who asks, whom an "always" covers, the
    /// listen streams a profile holds).
    pub sessions: Arc<Sessions>,
    /// What tool calls share: ids, the keepalive, the rate-limit buckets, the parked calls.
    pub calls: Arc<Calls>,
}

/// What every tool call shares with the others.
pub(super) struct Calls {
    /// The next of Gatehouse's own ids (progress tokens, requests forwarded to clients): unique
    /// across clients.
    ids: AtomicU64,
    /// Milliseconds between "still waiting for approval" progress notifications.
    keepalive_ms: AtomicU64,
    /// Each profile's rate-limit buckets (`limits.rs`).
    pub limits: RateLimits,
    /// Calls waiting for a 2026-07-28 client's retry with its input (`input.rs`).
    pub parked: ParkedCalls,
    /// The whole results of calls cut to their budget (`budget.rs`).
    pub results: super::budget::Results,
}

impl Calls {
    /// No call made yet; a held call hears it is still waiting every `keepalive`.
    pub fn new(keepalive: Duration) -> Calls {
        Calls {
            ids: AtomicU64::new(1),
            keepalive_ms: AtomicU64::new(keepalive.as_millis() as u64),
            limits: RateLimits::default(),
            parked: ParkedCalls::default(),
            results: Default::default(),
        }
    }

    /// Sets how often a held call with a progress token hears it is still waiting.
    pub fn set_keepalive(&self, every: Duration) {
        self.keepalive_ms
            .store(every.as_millis().max(1) as u64, Ordering::Relaxed);
    }
}

impl Cx {
    /// The next of Gatehouse's own ids.
    pub fn next_id(&self) -> u64 {
        self.calls.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// How often a held call with a progress token hears it is still waiting.
    pub fn keepalive(&self) -> Duration {
        Duration::from_millis(self.calls.keepalive_ms.load(Ordering::Relaxed))
    }

    /// The current catalog (rebuilt first if a server changed since it was built).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.tools.current(&self.hub, &self.sessions)
    }

    /// The session's client profile as the config says now (`None`: the gateway token's, which
    /// sees everything).
    pub fn profile(&self) -> Option<ClientProfile> {
        let id = self.session.profile.as_deref()?;
        Some(setting_of(&self.hub.config(), id))
    }

    /// Whether the session's client profile sees server `id` (every server without a profile).
    pub fn sees(&self, id: &ServerId) -> bool {
        self.profile().is_none_or(|p| p.sees_server(id.as_str()))
    }

    /// The names the session's client profile sees now.
    pub fn view(&self) -> Arc<View> {
        let profile = self.session.profile.as_deref();
        let setting = profile.map(|p| setting_of(&self.hub.config(), p));
        self.tools
            .view(&self.hub, &self.catalog(), profile, setting.as_ref())
    }

    /// The clients active in the last 5 minutes, each flagged when its name imitates another's.
    pub fn recent_clients(&self) -> Vec<crate::profiles::Connected> {
        self.sessions.connected(super::CONNECTED_WITHIN)
    }
}

/// Client profile `profile`'s setting in `config` (`None` for the gateway token's).
pub(super) fn profile_in(config: &Config, profile: Option<&str>) -> Option<ClientProfile> {
    Some(setting_of(config, profile?))
}

/// Client profile `p`'s setting in `config`; a profile removed from the config sees nothing
/// until its sessions end.
pub(super) fn setting_of(config: &Config, p: &str) -> ClientProfile {
    config
        .clients
        .iter()
        .find(|(k, _)| k.as_str() == p)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| ClientProfile {
            servers: Some(Vec::new()),
            ..Default::default()
        })
}
