//! The last tool definitions each server listed, kept across runs (`DATA/tools/ID.json`, 0600):
//! an on-demand server's tools are offered from them while it is idle. Each definition is kept
//! exactly as the server sent it; what is read back is parsed as a live listing is, and a file
//! that is missing, too large or unreadable is no list at all (the server is then started once
//! to learn its tools). A secret value a careless server put in a definition is masked in the
//! file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::value::RawValue;

use super::status::ToolDef;
use crate::secrets::Redactions;

/// The largest kept listing read back.
pub const MAX_KNOWN_BYTES: u64 = 16 << 20;

fn file(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.json"))
}

/// Keeps `tools` as server `id`'s last known listing, every secret value a careless server
/// put in a definition masked (no file holds one).
pub fn save(dir: &Path, id: &str, tools: &[Arc<ToolDef>], redactions: &Redactions) {
    let raws: Vec<&RawValue> = tools.iter().map(|t| &*t.raw).collect();
    let Ok(text) = serde_json::to_string(&raws) else {
        return;
    };
    let text = redactions.mask(&text).into_bytes();
    if let Err(e) = crate::private::create_dir(dir)
        .and_then(|()| crate::config::write_atomic(&file(dir, id), &text))
    {
        tracing::warn!(server = id, error = %e, "the tool list could not be kept");
    }
}

/// Server `id`'s last known listing, if there is one.
pub fn load(dir: &Path, id: &str, redactions: &Arc<Redactions>) -> Option<Vec<Arc<ToolDef>>> {
    let path = file(dir, id);
    if std::fs::metadata(&path).ok()?.len() > MAX_KNOWN_BYTES {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let raws: Vec<Box<RawValue>> = serde_json::from_str(&text).ok()?;
    raws.into_iter()
        .map(|r| ToolDef::parse(r, redactions.clone()).ok().map(Arc::new))
        .collect()
}

/// Forgets server `id`'s listing (the server was removed).
pub fn forget(dir: &Path, id: &str) {
    let _ = std::fs::remove_file(file(dir, id));
}
