//! The one error type every command returns: a message the UI shows as is, plus a kind it can
//! branch on.

use serde::Serialize;

/// What kind of failure, for the UI to branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The hub is starting, failed to start, or quitting.
    NotReady,
    /// The input was refused (the message says which part and why).
    Invalid,
    /// Anything else.
    Failed,
}

#[derive(Debug, Clone, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct CommandError {
    pub kind: ErrorKind,
    pub message: String,
    /// For refused form input: the field the message is about (the form shows it there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'static str>,
}

impl CommandError {
    pub fn not_ready(message: impl Into<String>) -> Self {
        CommandError {
            kind: ErrorKind::NotReady,
            message: message.into(),
            field: None,
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        CommandError {
            kind: ErrorKind::Invalid,
            message: message.into(),
            field: None,
        }
    }
    pub fn failed(message: impl std::fmt::Display) -> Self {
        CommandError {
            kind: ErrorKind::Failed,
            message: message.to_string(),
            field: None,
        }
    }
}

impl From<gatehouse::config::EntryError> for CommandError {
    fn from(e: gatehouse::config::EntryError) -> Self {
        CommandError {
            kind: ErrorKind::Invalid,
            message: e.to_string(),
            field: e.field,
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
