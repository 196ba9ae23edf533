//! Where a server's grant is kept: one keychain entry per server, `oauth:ID`. A platform that
//! caps an entry's size (Windows Credential Manager: 2,560 bytes) gets the record split over
//! `oauth:ID`, `oauth:ID#2`, … — the first entry says how many parts there are.

use crate::secrets::{KeychainStore, SecretError, SecretSource};

/// A store of Gatehouse's own secrets (tokens), by name.
pub trait Vault: Send + Sync {
    /// The value, `None` when there is none.
    fn load(&self, name: &str) -> Result<Option<String>, String>;
    /// Stores (replacing) a value.
    fn save(&self, name: &str, value: &str) -> Result<(), String>;
    /// Deletes a value (absent is fine).
    fn remove(&self, name: &str) -> Result<(), String>;
}

/// No store: sign-in is refused, saying why (hubs started without a keychain).
pub struct NoVault;

impl Vault for NoVault {
    fn load(&self, _: &str) -> Result<Option<String>, String> {
        Ok(None)
    }
    fn save(&self, _: &str, _: &str) -> Result<(), String> {
        Err("this hub has no keychain to keep sign-in tokens in (`gatehouse serve` and the app use the OS keychain)".into())
    }
    fn remove(&self, _: &str) -> Result<(), String> {
        Ok(())
    }
}

/// An in-memory store, for unit tests.
#[derive(Default)]
pub struct MemoryVault(pub std::sync::Mutex<std::collections::BTreeMap<String, String>>);

impl Vault for MemoryVault {
    fn load(&self, name: &str) -> Result<Option<String>, String> {
        Ok(crate::sync::lock(&self.0).get(name).cloned())
    }
    fn save(&self, name: &str, value: &str) -> Result<(), String> {
        crate::sync::lock(&self.0).insert(name.to_owned(), value.to_owned());
        Ok(())
    }
    fn remove(&self, name: &str) -> Result<(), String> {
        crate::sync::lock(&self.0).remove(name);
        Ok(())
    }
}

fn keychain_err(e: SecretError) -> String {
    match e {
        SecretError::Unavailable { reason, .. } => reason,
        other => other.to_string(),
    }
}

impl Vault for KeychainStore {
    fn load(&self, name: &str) -> Result<Option<String>, String> {
        match self.get(name) {
            Ok(v) => Ok(Some(v)),
            Err(SecretError::Missing { .. }) => Ok(None),
            Err(e) => Err(keychain_err(e)),
        }
    }
    fn save(&self, name: &str, value: &str) -> Result<(), String> {
        self.set_internal(name, value).map_err(keychain_err)
    }
    fn remove(&self, name: &str) -> Result<(), String> {
        self.delete(name).map(|_| ()).map_err(keychain_err)
    }
}

/// The largest part stored in one entry: under Windows' 2,560-byte cap once stored as UTF-16
/// (the record is ASCII JSON); unlimited elsewhere.
pub const PART: usize = if cfg!(windows) { 1200 } else { usize::MAX };
const PARTS_PREFIX: &str = "gatehouse-parts:";

/// The keychain name of a server's grant.
pub fn entry_name(server: &str) -> String {
    format!("oauth:{server}")
}

fn part_name(first: &str, i: usize) -> String {
    format!("{first}#{i}")
}

/// Stores `value` under `name`, in parts of at most `part` bytes when it is larger; parts of an
/// older, longer value are deleted.
pub fn save_split(v: &dyn Vault, name: &str, value: &str, part: usize) -> Result<(), String> {
    let old_parts = parts_of(v.load(name).ok().flatten().as_deref());
    if value.len() <= part && !value.starts_with(PARTS_PREFIX) {
        v.save(name, value)?;
        for i in 2..=old_parts {
            let _ = v.remove(&part_name(name, i));
        }
        return Ok(());
    }
    // Split at character boundaries (an issuer or a scope may be non-ASCII): a part is never
    // a broken character, and never more than `part` bytes (so never more UTF-16 units).
    let head_room = part.saturating_sub(PARTS_PREFIX.len() + 8).max(4);
    let (head, mut tail) = value.split_at(boundary(value, head_room));
    let mut rest = Vec::new();
    while !tail.is_empty() {
        let (p, t) = tail.split_at(boundary(tail, part.max(4)));
        rest.push(p);
        tail = t;
    }
    let count = 1 + rest.len();
    if count > MAX_PARTS {
        return Err(format!(
            "the record is {} bytes, over {MAX_PARTS} keychain entries: not kept",
            value.len()
        ));
    }
    for (i, chunk) in rest.iter().enumerate() {
        v.save(&part_name(name, i + 2), chunk)?;
    }
    v.save(name, &format!("{PARTS_PREFIX}{count}\n{head}"))?;
    for i in count + 1..=old_parts {
        let _ = v.remove(&part_name(name, i));
    }
    Ok(())
}

/// The most parts one record is split into.
const MAX_PARTS: usize = 64;

/// The largest index ≤ `max` (and ≥ 1 when `s` is not empty) at a character boundary of `s`.
fn boundary(s: &str, max: usize) -> usize {
    if s.len() <= max {
        return s.len();
    }
    let mut i = max;
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    if i == 0 {
        // A character wider than `max` (max ≥ 4 makes this unreachable): take it whole.
        i = s.char_indices().nth(1).map_or(s.len(), |(j, _)| j);
    }
    i
}

fn parts_of(first: Option<&str>) -> usize {
    first
        .and_then(|f| f.strip_prefix(PARTS_PREFIX))
        .and_then(|r| r.split_once('\n'))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(1)
}

/// The value stored by [`save_split`]; `None` when absent, an error when a part is missing.
pub fn load_split(v: &dyn Vault, name: &str) -> Result<Option<String>, String> {
    let Some(first) = v.load(name)? else {
        return Ok(None);
    };
    let Some(rest) = first.strip_prefix(PARTS_PREFIX) else {
        return Ok(Some(first));
    };
    let (count, head) = rest
        .split_once('\n')
        .ok_or_else(|| format!("the keychain entry {name} is damaged"))?;
    let count: usize = count
        .parse()
        .map_err(|_| format!("the keychain entry {name} is damaged"))?;
    let mut out = head.to_owned();
    for i in 2..=count.min(MAX_PARTS) {
        let p = v
            .load(&part_name(name, i))?
            .ok_or_else(|| format!("part {i} of the keychain entry {name} is missing"))?;
        out.push_str(&p);
    }
    Ok(Some(out))
}

/// Deletes every part stored under `name`.
pub fn remove_split(v: &dyn Vault, name: &str) -> Result<(), String> {
    let parts = parts_of(v.load(name).ok().flatten().as_deref());
    for i in 2..=parts.min(MAX_PARTS) {
        v.remove(&part_name(name, i))?;
    }
    v.remove(name)
}
