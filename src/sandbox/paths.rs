//! The paths every part of the sandbox reasons about, on the ground floor: the credential stores
//! under the home directory no confined server may read, and `~` expanded. `plan` (the rules),
//! `places` (what a server is told about) and `blame` (what a failure may be) all read them here.

use std::path::{Path, PathBuf};

/// Credential stores and secrets under the home directory no confined server may read: keys,
/// cloud and cluster credentials, browser profiles, the keyring's files, and the AI clients'
/// own files (they may hold a Gatehouse token).
pub const CREDENTIAL_STORES: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".password-store",
    ".pki",
    ".mozilla",
    ".thunderbird",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    ".config/opera",
    ".local/share/keyrings",
    ".config/gh",
    ".config/gatehouse",
    ".local/share/gatehouse",
    ".local/state/gatehouse",
    ".claude.json",
    ".claude",
    ".cursor",
    ".codex",
    ".gemini",
    ".codeium",
    ".config/Code",
    ".config/Claude",
    ".config/zed",
    ".config/opencode",
    ".config/goose",
    ".copilot",
];

/// `~/x` and `~` with the home directory.
pub fn expand(p: &str, home: Option<&Path>) -> PathBuf {
    match (p.strip_prefix("~/"), p == "~", home) {
        (Some(rest), _, Some(h)) => h.join(rest),
        (_, true, Some(h)) => h.to_owned(),
        _ => PathBuf::from(p),
    }
}
