//! What a pin is of, and a change to something pinned that waits for the person, as plain data
//! (the `change_held` event, `gatehouse approvals`, `gatehouse pins`). The pins themselves live
//! in `pins.rs` and `pins/said.rs`; the held changes in `broker/changes.rs`.

use serde::{Deserialize, Serialize};

/// What a pin is of: a tool's definition, a prompt (its definition, or the text `prompts/get`
/// returns for one argument set), a server's `instructions`, or an app's `ui://` resource.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum PinKind {
    /// A tool's definition (a change to it asks again at the tool's next call).
    #[default]
    Tool,
    /// A prompt's definition or text.
    Prompt,
    /// The server's `instructions` from its handshake.
    Instructions,
    /// The content of a `ui://` resource (an MCP App's HTML).
    Ui,
}

impl PinKind {
    /// The kind as serialised (`tool`, `prompt`, `instructions`, `ui`).
    pub fn as_str(self) -> &'static str {
        match self {
            PinKind::Tool => "tool",
            PinKind::Prompt => "prompt",
            PinKind::Instructions => "instructions",
            PinKind::Ui => "ui",
        }
    }
}

/// One pin, as `gatehouse pins` lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PinRow {
    /// What it is of.
    pub kind: PinKind,
    /// The server's id.
    pub server: String,
    /// The tool's or prompt's own name, the `ui://` URI; empty for instructions.
    pub name: String,
    /// For a prompt's text: the argument set it was got with (canonical JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// The SHA-256 (hex) of the pinned content in canonical form.
    pub hash: String,
    /// When it was pinned or last approved (ms since the epoch; 0: before Gatehouse kept it).
    pub since: u64,
}

/// A change to something a server says that waits for the person: until approved, clients get
/// the pinned version (or an error where Gatehouse has not kept it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HeldChange {
    /// Its id (`chg-RUN-N`), for `gatehouse approve` / `deny`. A further change to the same
    /// thing gets a new id: an answer covers exactly the content that was shown.
    pub id: String,
    /// What changed.
    pub kind: PinKind,
    /// The server's id.
    pub server: String,
    /// The prompt's own name, the `ui://` URI; empty for instructions.
    pub name: String,
    /// For a prompt's text: the argument set it was got with (canonical JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// The pinned content's hash and size (bytes as the server sent it).
    pub old_hash: String,
    /// The pinned content's size in bytes.
    pub old_bytes: usize,
    /// The new content's hash.
    pub new_hash: String,
    /// The new content's size in bytes.
    pub new_bytes: usize,
    /// A unified diff of the text, pinned → new (prompts and instructions; bounded). `None` for
    /// an app's HTML (its size and hash are shown, and `new_text` is the content) or when the
    /// pinned text was too long to keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The new content as text a person reads (bounded): shown escaped, never rendered.
    pub new_text: String,
    /// When it was first seen (ms since the epoch).
    pub requested_at: u64,
    /// What it is, in a sentence for the person.
    pub reason_text: String,
    /// What clients get meanwhile: `pinned` (the approved version) or `error`.
    pub serving: String,
}

/// The longest diff or text a held change carries (bytes; cut with a note past it).
pub const MAX_SHOWN_BYTES: usize = 64 << 10;

impl HeldChange {
    /// What a client is told while the change waits (where no approved version was kept), and
    /// what its activity row says.
    pub fn waits(&self) -> String {
        format!(
            "{}: a change waits for approval in Gatehouse ({}; see `gatehouse approvals`)",
            self.reason_text, self.id
        )
    }

    /// The activity row's tool column: `(kind) name`, or `(instructions)`.
    pub fn row_name(&self) -> String {
        match self.kind {
            PinKind::Instructions => "(instructions)".to_owned(),
            kind => format!("({}) {}", kind.as_str(), self.name),
        }
    }

    /// The sentence for the person: what changed, and what clients get meanwhile.
    pub fn reason(kind: PinKind, server: &str, name: &str, pinned_kept: bool) -> String {
        let what = match kind {
            PinKind::Tool => format!("the definition of tool {name}"),
            PinKind::Prompt => format!("prompt {name}"),
            PinKind::Instructions => "its instructions".to_owned(),
            PinKind::Ui => format!("the app at {name}"),
        };
        let meanwhile = if pinned_kept {
            "clients get the approved version until you approve it"
        } else {
            "clients get an error until you approve it"
        };
        crate::text::reveal(&format!(
            "server {server} changed {what} since it was approved; {meanwhile}"
        ))
        .into_owned()
    }
}
