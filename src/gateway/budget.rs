//! Result budgets applied (`config::budget_for`): a tool result whose JSON text is over its
//! budget reaches the client cut where it stays a valid MCP result — whole `content` items in
//! order, then as much of the next text item as fits (never half an escape or character), other
//! items that do not fit left out, `structuredContent` kept whole or left out — and ends with a
//! text item the model reads: `[cut by Gatehouse: …; the whole result is resource
//! gatehouse://results/ID …]`. The whole result is kept for the same client profile only, for
//! [`KEEP_FOR`], within [`KEPT_BYTES`]. A result within its budget is not read at all: its
//! line's length is compared, nothing more.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::parts::{raw, split, text_item, Parts, Raw};

/// The URI of a kept result: this, then its id.
pub const URI_PREFIX: &str = "gatehouse://results/";
/// How long a whole result stays readable.
pub const KEEP_FOR: Duration = Duration::from_secs(15 * 60);
/// The most bytes of whole results kept, all profiles together (the oldest go first).
pub const KEPT_BYTES: usize = 64 << 20;
/// The most whole results kept.
pub const KEPT_MAX: usize = 256;
/// Room kept for the note, which names the sizes and the URI.
const NOTE_ROOM: usize = 320;

struct Kept {
    id: String,
    profile: String,
    result: String,
    until: Instant,
}

/// The whole results of cut calls.
#[derive(Default)]
pub struct Results {
    kept: Mutex<VecDeque<Kept>>,
    next: AtomicU64,
}

impl Results {
    /// Keeps `result` for `profile`; its URI.
    fn keep(&self, profile: &str, result: String) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let id = format!("{n}-{:08x}", fastrand::u32(..));
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        kept.retain(|k| k.until > now);
        let mut total: usize = kept.iter().map(|k| k.result.len()).sum::<usize>() + result.len();
        while (total > KEPT_BYTES || kept.len() >= KEPT_MAX) && !kept.is_empty() {
            if let Some(old) = kept.pop_front() {
                total -= old.result.len();
            }
        }
        kept.push_back(Kept {
            id: id.clone(),
            profile: profile.to_owned(),
            result,
            until: now + KEEP_FOR,
        });
        format!("{URI_PREFIX}{id}")
    }

    /// The whole result at `uri`, for the profile it was cut for only.
    pub fn read(&self, profile: &str, uri: &str) -> Option<String> {
        let id = uri.strip_prefix(URI_PREFIX)?;
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        kept.iter()
            .find(|k| k.id == id && k.profile == profile && k.until > now)
            .map(|k| k.result.clone())
    }
}

/// `resources/read` of a kept result: its `contents`, the result's JSON as text.
pub fn contents(uri: &str, result: &str) -> String {
    serde_json::json!({"contents": [{"uri": uri, "mimeType": "application/json", "text": result}]})
        .to_string()
}

/// The client's line with its result cut to `budget` bytes (kept whole, as the server wrote it,
/// for `profile` in `results`); the line as it was when it is within the budget or no result.
pub fn apply(line: Vec<u8>, budget: u64, results: &Results, profile: &str) -> Vec<u8> {
    let budget = budget as usize;
    if line.len() <= budget {
        return line;
    }
    let Some(mut parts) = split(&line) else {
        return line;
    };
    let total = parts.whole().len();
    if total <= budget {
        return line;
    }
    let uri = results.keep(profile, parts.whole().to_owned());
    match cut(&mut parts, budget, total, &uri).and_then(|()| parts.join()) {
        Some(out) => out,
        // Unreachable in practice (every piece was read from JSON): the whole line rather than
        // a broken one.
        None => line,
    }
}

/// The result of `parts` within `budget` bytes (of `total`), ending with the note naming `uri`.
fn cut(parts: &mut Parts, budget: usize, total: usize, uri: &str) -> Option<()> {
    let items = parts.take_items();
    let structured = parts.result.remove("structuredContent");
    // What stays of the rest (isError, resultType…): `_meta` only when small.
    if parts
        .result
        .get("_meta")
        .is_some_and(|m| m.get().len() > 1024)
    {
        parts.result.remove("_meta");
    }
    let rest: usize = parts
        .result
        .iter()
        .map(|(k, v)| k.len() + v.get().len() + 4)
        .sum();
    let mut room = budget.saturating_sub(rest + NOTE_ROOM + 40);
    let mut notes = Vec::new();
    // The structured form first (small, and what a program reads): whole, or left out.
    if let Some(s) = structured {
        let size = s.get().len() + 24;
        if size <= room {
            room -= size;
            parts.result.insert("structuredContent".into(), s);
        } else {
            notes.push("structuredContent left out".to_owned());
        }
    }
    let mut kept: Vec<Raw> = Vec::new();
    let mut left_out = 0usize;
    let mut cut_text = false;
    for item in items {
        let size = item.get().len() + 1;
        if size <= room && !cut_text {
            room -= size;
            kept.push(item);
            continue;
        }
        if !cut_text {
            if let Some((mut members, text)) = text_item(&item) {
                members.insert("text".into(), raw(&"")?);
                let frame = raw(&members)?.get().len() + 1;
                let part = prefix_within(&text, room.saturating_sub(frame));
                if !part.is_empty() {
                    members.insert("text".into(), raw(&part)?);
                    let partial = raw(&members)?;
                    room = room.saturating_sub(partial.get().len() + 1);
                    kept.push(partial);
                }
                cut_text = true;
                continue;
            }
        }
        left_out += 1;
    }
    if left_out > 0 {
        notes.push(format!("{left_out} content item(s) left out"));
    }
    let shown: usize = kept.iter().map(|i| i.get().len()).sum();
    let extra = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join(", "))
    };
    let note = format!(
        "[cut by Gatehouse: cut at {shown} of {total} bytes{extra}; the whole result is resource {uri} (resources/read, this client only, for {} minutes)]",
        KEEP_FOR.as_secs() / 60
    );
    kept.push(raw(&serde_json::json!({"type": "text", "text": note}))?);
    parts.result.insert("content".into(), raw(&kept)?);
    Some(())
}

fn char_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The longest prefix of `text` (whole characters) whose JSON escaping takes at most `room`.
fn prefix_within(text: &str, room: usize) -> &str {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        used += char_len(c);
        if used > room {
            return &text[..at];
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn line(result: Value) -> Vec<u8> {
        let mut l = serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": result})
            .to_string()
            .into_bytes();
        l.push(b'\n');
        l
    }

    /// A result over its budget stays a valid result within it — whole items, then part of a
    /// text (escapes and characters whole), the note last naming the URI —; the whole result is
    /// readable by the same profile only; a result within its budget is the same bytes.
    #[test]
    fn a_result_over_its_budget_is_cut_whole_and_kept_for_its_profile() {
        let results = Results::default();
        let big = "é\"\n".repeat(200_000);
        let original = line(serde_json::json!({
            "content": [
                {"type": "text", "text": "first"},
                {"type": "text", "text": big},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"}
            ],
            "structuredContent": {"rows": big.len(), "zid": 1},
            "isError": false
        }));
        // A number past 2^53, as the server wrote it: never read into a float and written back.
        let original = String::from_utf8(original)
            .unwrap()
            .replace("\"zid\":1}", "\"zid\":123456789012345678901234567890}")
            .into_bytes();
        let cut = apply(original.clone(), 65536, &results, "cursor");
        let text = String::from_utf8(cut.clone()).unwrap();
        assert!(
            text.contains("\"zid\":123456789012345678901234567890}"),
            "a number changed"
        );
        assert!(cut.len() <= 65536 + 64, "{}", cut.len());
        assert!(cut.ends_with(b"\n"));
        let v: Value = serde_json::from_slice(&cut).unwrap();
        assert_eq!(v["id"], 7);
        let content = v["result"]["content"].as_array().unwrap();
        assert_eq!(content[0]["text"], "first");
        let part = content[1]["text"].as_str().unwrap();
        assert!(
            big.starts_with(part) && part.len() > 30_000,
            "{}",
            part.len()
        );
        let note = content.last().unwrap()["text"].as_str().unwrap();
        assert!(note.starts_with("[cut by Gatehouse:"), "{note}");
        assert!(note.contains("1 content item(s) left out"), "{note}");
        assert_eq!(v["result"]["structuredContent"]["rows"], big.len());
        assert_eq!(v["result"]["isError"], false);
        let uri = note
            .split_whitespace()
            .find(|w| w.starts_with(URI_PREFIX))
            .unwrap();
        let whole = results.read("cursor", uri).unwrap();
        let sent = String::from_utf8(original).unwrap();
        assert!(
            sent.contains(&format!("\"result\":{whole}}}")),
            "the whole result is the server's text"
        );
        assert_eq!(results.read("zed", uri), None, "another profile");
        let small = line(serde_json::json!({"content": [{"type": "text", "text": "ok"}]}));
        assert_eq!(apply(small.clone(), 1024, &results, "cursor"), small);
    }
}
