//! Changes to what a server says (a prompt, its instructions, an app's HTML) held for the
//! person: [`ApprovalBroker::said`] compares what a server says now with its pin
//! (`pins/said.rs`); a change is held here until `approve` (the new content becomes the pin) or
//! `deny` (the pin stays; the next sight holds it again). Held changes live in memory: after a
//! restart the next sight finds the change again. One held change per pinned thing: a further
//! change replaces it under a new id, so an answer covers exactly the content that was shown.

use super::super::change::{HeldChange, PinKind, PinRow, MAX_SHOWN_BYTES};
use super::super::pins::said::{self, Said, SaidPin, Seen};
use super::super::request::ApprovalError;
use super::ApprovalBroker;
use crate::events::Event;

/// A change waiting for the person, with what it would pin.
pub(super) struct Held {
    pub change: HeldChange,
    /// The pin's key in the store.
    key: String,
    /// The pin the content becomes when approved.
    next: SaidPin,
}

/// Changes held at most; past it the oldest gives way (it is held again at its next sight).
pub const MAX_HELD_CHANGES: usize = 64;

/// What the client gets for something a server says now.
pub enum Heard {
    /// What the server says (as pinned, or seen for the first time).
    Pass,
    /// A change waits for the person: the pinned content (JSON text) in its place.
    Pinned(String),
    /// A change waits for the person and the pinned content was not kept: the error's text,
    /// naming it.
    Held(String),
}

impl ApprovalBroker {
    /// Compares what a server says now with its pin: the first sight is pinned; a change is
    /// held for the person (the `change_held` event) and the client gets the pinned version,
    /// else an error. Returns the held change too when it is new (for the activity log).
    pub fn said(&self, s: &Said<'_>) -> (Heard, Option<HeldChange>) {
        let (seen, stored) = self.lock().store.said_seen(s);
        if stored {
            self.persist();
        }
        let pin = match seen {
            Seen::Same => return (Heard::Pass, None),
            Seen::Changed(pin) => pin,
        };
        let next = s.approved();
        let key = s.key();
        let mut st = self.lock();
        let same = st
            .changes
            .values()
            .find(|h| h.key == key)
            .map(|h| (h.change.id.clone(), h.next.sha256() == next.sha256()));
        let (change, new) = match same {
            Some((id, true)) => (st.changes[&id].change.clone(), false),
            other => {
                if let Some((old, _)) = other {
                    st.changes.remove(&old);
                }
                let change = self.held_change(s, &pin, &next);
                if st.changes.len() >= MAX_HELD_CHANGES {
                    let oldest = st
                        .changes
                        .values()
                        .min_by_key(|h| h.change.requested_at)
                        .map(|h| h.change.id.clone());
                    if let Some(oldest) = oldest {
                        st.changes.remove(&oldest);
                    }
                }
                st.changes.insert(
                    change.id.clone(),
                    Held {
                        change: change.clone(),
                        key,
                        next,
                    },
                );
                (change, true)
            }
        };
        drop(st);
        if new {
            self.inner.bus.publish(Event::ChangeHeld(change.clone()));
        }
        let heard = match pin.kept() {
            Some(kept) => Heard::Pinned(kept.to_owned()),
            None => Heard::Held(change.waits()),
        };
        (heard, new.then_some(change))
    }

    fn held_change(&self, s: &Said<'_>, pin: &SaidPin, next: &SaidPin) -> HeldChange {
        let text_of_prompt = s.arguments.is_some();
        let new_text = said::shown(s.kind, text_of_prompt, s.content);
        let diff = match (s.kind, pin.kept()) {
            (PinKind::Ui, _) | (_, None) => None,
            (_, Some(old)) => {
                let old_text = said::shown(s.kind, text_of_prompt, old);
                let diff = similar::TextDiff::from_lines(&old_text, &new_text)
                    .unified_diff()
                    .context_radius(3)
                    .header("approved", "new")
                    .to_string();
                Some(crate::text::cut(&diff, MAX_SHOWN_BYTES))
            }
        };
        let id = self.next_id().replacen("apr-", "chg-", 1);
        HeldChange {
            id,
            kind: s.kind,
            server: s.server.to_owned(),
            name: s.name.to_owned(),
            arguments: s.arguments.clone(),
            old_hash: pin.sha256().to_owned(),
            old_bytes: pin.bytes(),
            new_hash: next.sha256().to_owned(),
            new_bytes: next.bytes(),
            diff,
            new_text,
            requested_at: crate::logs::now_ms(),
            reason_text: HeldChange::reason(s.kind, s.server, s.name, pin.kept().is_some()),
            serving: if pin.kept().is_some() {
                "pinned"
            } else {
                "error"
            }
            .to_owned(),
        }
    }

    /// The changes waiting for the person, oldest first.
    pub fn changes(&self) -> Vec<HeldChange> {
        let st = self.lock();
        let mut out: Vec<HeldChange> = st.changes.values().map(|h| h.change.clone()).collect();
        out.sort_by_key(|c| c.requested_at);
        out
    }

    /// Answers a held change: allowed, its content becomes the pin; denied, the pin stays.
    pub fn answer_change(&self, id: &str, allow: bool) -> Result<HeldChange, ApprovalError> {
        let Some(held) = self.lock().changes.remove(id) else {
            return Err(ApprovalError::Unknown(id.to_owned()));
        };
        if allow {
            self.lock().store.said_trust(held.key, held.next);
            self.persist();
        }
        self.inner.bus.publish(Event::ChangeResolved {
            id: id.to_owned(),
            allowed: allow,
        });
        Ok(held.change)
    }

    /// Every pin: tools, prompts, instructions and apps, by server.
    pub fn pins(&self) -> Vec<PinRow> {
        self.lock().store.rows()
    }
}
