//! Start on first use (`"start": "on_demand"`): an on-demand server is `idle` — not running, its
//! last known tools offered — until a call needs it; it starts then (the call waits), and stops
//! again after `idle_stop_secs` with no call in flight and none begun. One with no known tools is
//! started once to learn them, and stops as soon as it listed them unless a call came.

use super::Actor;
use crate::events::Event;
use crate::logs::now_ms;
use crate::supervisor::shared::lock;
use crate::supervisor::status::State;
use std::sync::Arc;
use std::time::Duration;

use crate::config::StartMode;

impl Actor {
    /// Whether the config starts this server on demand.
    pub(super) fn on_demand_mode(&self) -> bool {
        self.cfg.effective_start == StartMode::OnDemand
    }

    /// Starts the server as its start mode says: at launch it starts; on demand it idles with
    /// its known tools, or starts once to learn them.
    pub(super) async fn launch_or_idle(&mut self) {
        if self.on_demand_mode() {
            if self.load_known() {
                self.go_idle();
                return;
            }
            self.learning = true;
        }
        self.begin_start().await;
    }

    fn load_known(&mut self) -> bool {
        let Some(dir) = &self.ctx.known_tools_dir else {
            return false;
        };
        match super::super::known::load(dir, self.shared.id.as_str(), &self.ctx.redactions) {
            Some(tools) => {
                self.known = Arc::new(tools);
                true
            }
            None => false,
        }
    }

    /// Idle: not running, its known tools offered.
    pub(super) fn go_idle(&mut self) {
        self.idle_at = None;
        self.retry_at = None;
        self.set_state(State::Idle, |s| {
            s.next_retry_ms = None;
            s.pid = None;
        });
        self.ctx.bus.publish(Event::ToolsChanged {
            server: self.shared.id.to_string(),
            tools: self.known.len(),
        });
    }

    /// A call needs the server: an idle one starts.
    pub(super) async fn on_demand(&mut self) {
        if self.state() == State::Idle {
            self.learning = false;
            self.clear_failures();
            self.begin_start().await;
        }
    }

    /// After every listing: the tools are kept as the last known ones (on disk too), and an
    /// on-demand server's idle clock is armed (at once when it was started only to learn them).
    pub(super) fn listed(&mut self) {
        let tools = lock(&self.shared.tools).clone();
        if let Some(dir) = &self.ctx.known_tools_dir {
            super::super::known::save(dir, self.shared.id.as_str(), &tools, &self.ctx.redactions);
        }
        self.known = tools;
        if self.on_demand_mode() && self.idle_at.is_none() {
            let wait = if self.learning {
                Duration::ZERO
            } else {
                self.idle_time()
            };
            self.idle_at = Some(tokio::time::Instant::now() + wait);
        }
    }

    fn idle_time(&self) -> Duration {
        Duration::from_secs(self.cfg.idle_stop_secs)
    }

    /// The idle clock ran out: a server with a call in flight, or one begun within its idle time,
    /// runs on (checked again later); otherwise it is stopped and idles.
    pub(super) async fn on_idle_check(&mut self) {
        use std::sync::atomic::Ordering;
        self.idle_at = None;
        if !self.on_demand_mode() || self.state() != State::Running {
            return;
        }
        let idle = self.idle_time();
        let in_flight = self.shared.in_flight.load(Ordering::Relaxed);
        let last = self.shared.last_used_ms.load(Ordering::Relaxed);
        let since = Duration::from_millis(now_ms().saturating_sub(last));
        if in_flight > 0 {
            self.idle_at = Some(tokio::time::Instant::now() + idle);
            return;
        }
        if last != 0 && since < idle {
            self.idle_at = Some(tokio::time::Instant::now() + (idle - since));
            return;
        }
        let why = if self.learning {
            "its tools are known; it starts when a call needs it".to_owned()
        } else {
            format!(
                "no call for {} s; it starts again when a call needs it",
                idle.as_secs()
            )
        };
        self.learning = false;
        self.end_session(&format!("idle: {why}")).await;
        self.note(format!("stopped while idle: {why}"));
        self.go_idle();
    }

    /// The config changed when the server starts (nothing else): a running on-demand server
    /// gets its idle clock, an idle server that now starts at launch starts.
    pub(super) async fn start_mode_changed(&mut self) {
        match (self.on_demand_mode(), self.state()) {
            (true, State::Running) if self.idle_at.is_none() => {
                self.idle_at = Some(tokio::time::Instant::now() + self.idle_time());
            }
            (false, State::Idle) if self.cfg.enabled => {
                self.learning = false;
                self.begin_start().await;
            }
            (false, _) => self.idle_at = None,
            _ => {}
        }
    }
}
