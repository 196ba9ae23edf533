//! The one error type every command returns: a message the UI shows as is, plus a kind it can
//! branch on.

use serde::Serialize;

#[derive(Debug, Clone, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct CommandError {
    /// `not_ready` (the hub is starting or failed), `invalid` (bad input), `failed`.
    pub kind: &'static str,
    pub message: String,
}

impl CommandError {
    pub fn not_ready(message: impl Into<String>) -> Self {
        CommandError {
            kind: "not_ready",
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        CommandError {
            kind: "invalid",
            message: message.into(),
        }
    }
    pub fn failed(message: impl std::fmt::Display) -> Self {
        CommandError {
            kind: "failed",
            message: message.to_string(),
        }
    }
}

impl From<gatehouse::hub::HubError> for CommandError {
    fn from(e: gatehouse::hub::HubError) -> Self {
        match e {
            gatehouse::hub::HubError::Config(m) => CommandError::invalid(m),
            other => CommandError::failed(other),
        }
    }
}

pub type CommandResult<T> = Result<T, CommandError>;
