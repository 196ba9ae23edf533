//! How the actor records what happened to its server: the state and status it publishes, a
//! failure's restart-or-give-up decision, a remote server waiting for a sign-in.

use super::Actor;
use crate::events::Event;
use crate::logs::now_ms;
use crate::logs::LogStream;
use crate::supervisor::shared::lock;
use crate::supervisor::status::ServerStatus;
use crate::supervisor::status::State;
use std::sync::Arc;
use std::time::Duration;

use super::backoff;

impl Actor {
    pub(super) fn clear_failures(&mut self) {
        self.update_status(|s| {
            s.consecutive_failures = 0;
            s.last_error = None;
            s.next_retry_ms = None;
        });
    }

    pub(super) fn note(&self, line: String) {
        self.shared.log(&self.ctx.bus, LogStream::Gatehouse, line);
    }

    /// A remote server that wants the person to sign in: no restart until they do (a sign-in,
    /// a restart, or a config change starts it again).
    pub(super) fn needs_sign_in(&mut self, why: String) {
        let why = self.ctx.redactions.mask(&why);
        self.retry_at = None;
        let id = self.shared.id.to_string();
        let text = format!(
            "needs a sign-in: {why}; sign in from the Servers view or run `gatehouse auth login {id}`"
        );
        self.note(text.clone());
        self.set_state(State::NeedsSignIn, |s| {
            s.last_error = Some(text);
            s.next_retry_ms = None;
            s.pid = None;
            s.consecutive_failures = 0;
        });
        self.ctx.bus.publish(Event::SignInNeeded {
            server: id,
            reason: why,
        });
    }

    /// Records a failure and decides between `restarting` (with backoff) and `failed`.
    pub(super) fn fail(&mut self, msg: String, fatal: bool, uptime: Option<Duration>) {
        // Error texts quote the server (its stderr, its error objects): masked before shown.
        let mut msg = self.ctx.redactions.mask(&msg);
        // A confined server's failure that may be the sandbox's doing says so, with the path
        // and the line that allows it (its recent stderr read too: a refusal is often said
        // before the last lines).
        if let Some(c) = lock(&self.shared.confined).clone() {
            let recent = self.shared.logs.stderr_since(40, c.launched_ms);
            let said = format!("{msg}\n{recent}");
            if let Some(b) = crate::sandbox::blame::blame(&said, &c, self.shared.id.as_str()) {
                msg = format!("{msg} — {}", self.ctx.redactions.mask(&b));
            }
        }
        let tuning = self.ctx.tuning.clone();
        let mut failures = self.shared.status.borrow().consecutive_failures;
        if uptime.is_some_and(|u| u >= tuning.reset_after) {
            failures = 0;
        }
        failures += 1;
        tracing::warn!(server = %self.shared.id, failures, error = %msg, "server failed");
        if fatal || failures >= tuning.max_failures || !self.cfg.enabled {
            let last_error = if !fatal && failures >= tuning.max_failures {
                format!("gave up after {failures} consecutive failures; last: {msg}")
            } else {
                msg
            };
            self.note(format!("failed: {last_error}"));
            self.retry_at = None;
            self.set_state(State::Failed, |s| {
                s.consecutive_failures = failures;
                s.last_crash = Some(last_error.clone());
                s.last_crash_ms = Some(now_ms());
                s.last_error = Some(last_error);
                s.next_retry_ms = None;
                s.pid = None;
            });
        } else {
            let delay = backoff::delay(
                tuning.backoff_base,
                tuning.backoff_max,
                failures,
                fastrand::f64(),
            );
            self.retry_at = Some(tokio::time::Instant::now() + delay);
            self.note(format!(
                "restarting in {:.1} s (failure {failures} of {})",
                delay.as_secs_f64(),
                tuning.max_failures
            ));
            self.set_state(State::Restarting, |s| {
                s.consecutive_failures = failures;
                s.last_crash = Some(msg.clone());
                s.last_crash_ms = Some(now_ms());
                s.last_error = Some(msg);
                s.next_retry_ms = Some(now_ms() + delay.as_millis() as u64);
                s.pid = None;
            });
        }
    }

    pub(super) fn update_status(&self, f: impl FnOnce(&mut ServerStatus)) {
        let mut changed = false;
        self.shared.status.send_if_modified(|s| {
            let before = s.clone();
            f(s);
            changed = *s != before;
            changed
        });
        if changed {
            self.ctx
                .bus
                .publish(Event::Status(self.shared.status.borrow().clone()));
        }
    }

    pub(super) fn set_state(&self, state: State, f: impl FnOnce(&mut ServerStatus)) {
        if state == State::Starting {
            // Warnings describe one run of the server; a new one starts without them.
            lock(&self.shared.warnings).clear();
        }
        if state == State::Idle {
            // An idle on-demand server offers its last known tools; the first call starts it.
            *lock(&self.shared.tools) = self.known.clone();
            *lock(&self.shared.capabilities) = None;
        } else if state != State::Running {
            // Tools of a server that is not running are offered to no one.
            *lock(&self.shared.tools) = Arc::new(Vec::new());
            *lock(&self.shared.capabilities) = None;
        }
        self.update_status(|s| {
            if s.state != state {
                s.state = state;
                s.since_ms = now_ms();
            }
            if !matches!(state, State::Running | State::Starting | State::Stopping) {
                s.pid = None;
            }
            if state == State::Idle {
                s.tools = self.known.len();
            } else if state != State::Running {
                s.tools = 0;
            }
            if state == State::Starting {
                s.warnings.clear();
            }
            f(s);
        });
    }
}
