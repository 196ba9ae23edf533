//! Approvals: which calls ask the person ([`policy`]), the [`ApprovalBroker`] that holds them
//! until an answer, and what is remembered across restarts (pins and "always" answers).

mod broker;
pub mod change;
mod ids;
mod persist;
mod pins;
pub mod policy;
pub mod request;
pub mod rules;
mod snapshot;

pub use crate::supervisor::status::definition_hash;
pub use broker::{ApprovalBroker, Heard};
pub use change::{HeldChange, PinKind, PinRow};
pub use pins::said::{Said, MAX_KEPT_BYTES};
pub use request::{
    arguments_digest, Answer, ApprovalError, ApprovalRequest, AskReason, ClientRef, Covered,
    Decider, DefinitionChange, Grant, Resolution, Scope, Verdict,
};
