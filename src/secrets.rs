//! Where secret references (`{"secret": "NAME"}`) get their values: [`KeychainStore`], the OS
//! keychain through `keyring` 4 on one dedicated thread (never a plaintext fallback), and
//! [`Redactions`], which masks every resolved value wherever text is stored or shown.

/// Why a secret has no value for us.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// The keychain holds no value under that name.
    #[error("secret {name} is not set — set it in the app's Secrets view or run `gatehouse secret set {name}`")]
    Missing {
        /// The secret's name.
        name: String,
    },
    /// The keychain could not be asked, or refused.
    #[error("keychain error for secret {name}: {reason}")]
    Unavailable {
        /// The secret's name.
        name: String,
        /// Why, with the fix.
        reason: String,
    },
}

mod forms;
use forms::{escaped_literals, forms};

/// A source of secret values. Called at spawn/connect time only, from a blocking thread.
pub trait SecretSource: Send + Sync {
    /// The secret's value.
    fn get(&self, name: &str) -> Result<String, SecretError>;
}

/// No secret store (the library default, for hubs that need none): every lookup fails, saying so.
#[derive(Debug, Default)]
pub struct NoSecretStore;

impl SecretSource for NoSecretStore {
    fn get(&self, name: &str) -> Result<String, SecretError> {
        Err(SecretError::Unavailable {
            name: name.to_owned(),
            reason: "this hub was started without a secret store (HubOptions::secrets); `gatehouse serve` uses the OS keychain".into(),
        })
    }
}

/// A fixed map, for unit tests only.
#[derive(Debug, Default)]
pub struct MemorySecretStore(pub std::collections::HashMap<String, String>);

impl SecretSource for MemorySecretStore {
    fn get(&self, name: &str) -> Result<String, SecretError> {
        self.0
            .get(name)
            .cloned()
            .ok_or_else(|| SecretError::Missing {
                name: name.to_owned(),
            })
    }
}

/// Every secret value resolved so far, kept in memory only, so that anything about to be stored
/// or shown (activity rows, server logs, error texts) can be masked as `[secret:NAME]`.
#[derive(Default)]
pub struct Redactions {
    /// Every form of every value, longest first. Guards one registration or one masking pass.
    values: std::sync::RwLock<Forms>,
}

/// The forms known, and one automaton that finds any of them in a single pass.
#[derive(Default)]
struct Forms {
    all: Vec<Form>,
    /// Every form of `all`, found at once (`None`: none known, or it could not be built — each
    /// form is then looked for on its own).
    any: Option<aho_corasick::AhoCorasick>,
}

impl Forms {
    /// Whether `haystack` holds any form, found in one pass.
    fn may_hold(&self, haystack: &[u8]) -> bool {
        match &self.any {
            Some(any) => any.is_match(haystack),
            None => self.all.iter().any(|f| f.found_in(haystack)),
        }
    }

    /// Adds every form of `value` under `name` (not yet [`Forms::changed`]).
    fn add(&mut self, name: &str, value: &str) {
        if value.len() < MIN_SECRET_LEN {
            return;
        }
        for form in forms(value) {
            if form.len() >= MIN_SECRET_LEN
                && !self.all.iter().any(|f| f.name == name && f.text == form)
            {
                self.all.push(Form::new(name, form));
            }
        }
    }

    /// The automaton made again after a change of the forms.
    fn changed(&mut self) {
        // Longest first, so a value containing another is masked whole.
        self.all.sort_by_key(|f| std::cmp::Reverse(f.text.len()));
        self.any = if self.all.is_empty() {
            None
        } else {
            aho_corasick::AhoCorasick::new(self.all.iter().map(|f| f.text.as_bytes())).ok()
        };
    }
}

impl std::ops::Deref for Forms {
    type Target = Vec<Form>;
    fn deref(&self) -> &Vec<Form> {
        &self.all
    }
}

/// `text` with every form of every value but those named in `keep` replaced by
/// `[secret:NAME]` — also inside a JSON string literal written with `\u` or `\/` escapes in any
/// mix, which is decoded, masked and written again. `None`: nothing to mask (one pass finds
/// whether any form is there; most lines hold none).
fn masked(v: &Forms, text: &str, keep: &[String]) -> Option<String> {
    let replace = |text: &str| -> Option<String> {
        let holds = v.may_hold(text.as_bytes())
            && v.iter()
                .any(|f| !keep.contains(&f.name) && f.found_in(text.as_bytes()));
        if !holds {
            return None;
        }
        let mut out = text.to_owned();
        for f in v.iter().filter(|f| !keep.contains(&f.name)) {
            if f.found_in(out.as_bytes()) {
                out = out.replace(f.text.as_str(), &format!("[secret:{}]", f.name));
            }
        }
        Some(out)
    };
    let mut changed = false;
    let mut out = text.to_owned();
    // From the last literal back, so the earlier ones' places still hold.
    for (at, decoded) in escaped_literals(text).into_iter().rev() {
        if let Some(m) = replace(&decoded) {
            out.replace_range(at, &crate::jsonrpc::json_string(&m));
            changed = true;
        }
    }
    match replace(&out) {
        Some(m) => Some(m),
        None => changed.then_some(out),
    }
}

/// One form of a value to find, with its searcher built once (building one costs more than the
/// search: every result line and every activity row is searched for every form).
struct Form {
    name: String,
    text: String,
    finder: memchr::memmem::Finder<'static>,
}

impl Form {
    fn new(name: &str, text: String) -> Form {
        let finder = memchr::memmem::Finder::new(text.as_bytes()).into_owned();
        Form {
            name: name.to_owned(),
            text,
            finder,
        }
    }

    fn found_in(&self, haystack: &[u8]) -> bool {
        self.finder.find(haystack).is_some()
    }
}

/// The shortest value Gatehouse keeps: anything shorter could not be masked without mangling
/// ordinary text, so it is refused when set (and when resolved, if an older one exists).
pub const MIN_SECRET_LEN: usize = 8;

impl Redactions {
    /// Remembers a resolved value, in every form a careless server might print it: raw,
    /// JSON-escaped, URL-encoded, and base64 (standard and URL-safe) at each of the three
    /// alignments it can have inside a longer base64 text. Values shorter than
    /// [`MIN_SECRET_LEN`] are not registered (they are refused before they get here).
    pub fn register(&self, name: &str, value: &str) {
        if value.len() < MIN_SECRET_LEN {
            return;
        }
        let mut v = crate::sync::write(&self.values);
        v.add(name, value);
        v.changed();
    }

    /// `text` with every known value, in every form, replaced by `[secret:NAME]`.
    pub fn mask(&self, text: &str) -> String {
        let v = crate::sync::read(&self.values);
        masked(&v, text, &[]).unwrap_or_else(|| text.to_owned())
    }

    /// A message relayed from a server (a result, an error, a progress or log notification)
    /// with every known value, in every form, replaced by `[secret:NAME]` — except the values
    /// of the secrets named in `keep` (the entry's `unmasked_secrets`: ones it is meant to hand
    /// over). Returned as it came, uncopied, when it holds none.
    pub fn mask_line(&self, line: Vec<u8>, keep: &[String]) -> Vec<u8> {
        let v = crate::sync::read(&self.values);
        if v.is_empty() {
            return line;
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            return line;
        };
        match masked(&v, text, keep) {
            Some(out) => out.into_bytes(),
            None => line,
        }
    }

    /// Forgets every value registered under `name` and registers `values` instead: a token that
    /// replaces an older one (a refresh) does not grow the list.
    pub fn replace(&self, name: &str, values: &[&str]) {
        // Under one lock, the automaton made once: no line is relayed between the old values
        // going and the new ones coming.
        let mut v = crate::sync::write(&self.values);
        v.all.retain(|f| f.name != name);
        for value in values {
            v.add(name, value);
        }
        v.changed();
    }

    /// Forgets every value whose name starts with `prefix` and registers `named` instead (the
    /// client profiles' tokens, after a change of the table).
    pub fn replace_all(&self, prefix: &str, named: &[(String, String)]) {
        let mut v = crate::sync::write(&self.values);
        v.all.retain(|f| !f.name.starts_with(prefix));
        for (name, value) in named {
            v.add(name, value);
        }
        v.changed();
    }

    /// The name of the first value registered under a name starting with `prefix` that `text`
    /// holds, in any of its forms.
    pub fn holds(&self, prefix: &str, text: &str) -> Option<String> {
        let v = crate::sync::read(&self.values);
        v.iter()
            .find(|f| f.name.starts_with(prefix) && f.found_in(text.as_bytes()))
            .map(|f| f.name.clone())
    }

    /// Whether any value is known (nothing to mask otherwise).
    pub fn is_empty(&self) -> bool {
        self.values.read().map(|v| v.is_empty()).unwrap_or(false)
    }
}

impl std::fmt::Debug for Redactions {
    /// Never the values: how many forms are known.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.values.read().map(|v| v.len()).unwrap_or(0);
        write!(f, "Redactions({n} forms)")
    }
}

impl crate::activity::Redactor for Redactions {
    fn redact(&self, text: &str) -> String {
        self.mask(text)
    }
}

/// The keychain service every Gatehouse secret lives under; the account is the secret's name.
pub const KEYCHAIN_SERVICE: &str = "gatehouse";
/// Windows Credential Manager refuses longer values; we refuse them first, with a reason.
pub const MAX_WINDOWS_VALUE: usize = 2560;
const KEYCHAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

enum KeychainOp {
    Get(String),
    Set(String, String),
    Delete(String),
}

struct KeychainJob {
    op: KeychainOp,
    reply: std::sync::mpsc::SyncSender<Result<Option<String>, SecretError>>,
}

/// The OS keychain via `keyring` 4: Secret Service (zbus) on Linux, Keychain on macOS,
/// Credential Manager on Windows. Every keychain call runs on one dedicated thread; callers
/// block (from blocking contexts only) for at most 30 s.
#[derive(Clone)]
pub struct KeychainStore {
    tx: std::sync::mpsc::Sender<KeychainJob>,
}

impl KeychainStore {
    /// Starts the keychain thread. It ends when every handle is dropped.
    pub fn start() -> KeychainStore {
        let (tx, rx) = std::sync::mpsc::channel::<KeychainJob>();
        let spawned = std::thread::Builder::new()
            .name("gatehouse-keychain".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    let result = match job.op {
                        KeychainOp::Get(name) => keychain_get(&name).map(Some),
                        KeychainOp::Set(name, value) => keychain_set(&name, &value).map(|()| None),
                        KeychainOp::Delete(name) => {
                            keychain_delete(&name).map(|had| had.then(String::new))
                        }
                    };
                    let _ = job.reply.send(result);
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the keychain thread");
        }
        KeychainStore { tx }
    }

    fn run(&self, name: &str, op: KeychainOp) -> Result<Option<String>, SecretError> {
        let (reply, rx) = std::sync::mpsc::sync_channel(1);
        let unavailable = |reason: &str| SecretError::Unavailable {
            name: name.to_owned(),
            reason: reason.to_owned(),
        };
        self.tx
            .send(KeychainJob { op, reply })
            .map_err(|_| unavailable("the keychain thread is not running"))?;
        rx.recv_timeout(KEYCHAIN_TIMEOUT).map_err(|_| {
            unavailable("the keychain did not answer within 30 s (is it locked and waiting for a password?)")
        })?
    }

    /// Stores a value (replacing any). Refuses values the platform would truncate.
    pub fn set(&self, name: &str, value: &str) -> Result<(), SecretError> {
        crate::config::validate_secret_name(name).map_err(|reason| SecretError::Unavailable {
            name: name.to_owned(),
            reason,
        })?;
        if value.chars().count() < MIN_SECRET_LEN {
            return Err(SecretError::Unavailable {
                name: name.to_owned(),
                reason: format!(
                    "the value is shorter than {MIN_SECRET_LEN} characters: Gatehouse could not keep so short a value out of logs and screens (masking it would mangle ordinary text), so it is refused; store the full token"
                ),
            });
        }
        if cfg!(windows) && value.len() > MAX_WINDOWS_VALUE {
            return Err(SecretError::Unavailable {
                name: name.to_owned(),
                reason: format!(
                    "the value is {} bytes; Windows Credential Manager holds at most {MAX_WINDOWS_VALUE} (it is refused, not truncated)",
                    value.len()
                ),
            });
        }
        self.run(name, KeychainOp::Set(name.to_owned(), value.to_owned()))
            .map(|_| ())
    }

    /// Stores a value Gatehouse made itself under a name of its own (`oauth:ID`), without the
    /// rules for names and values people type (the caller keeps under the platform's limit).
    pub(crate) fn set_internal(&self, name: &str, value: &str) -> Result<(), SecretError> {
        self.run(name, KeychainOp::Set(name.to_owned(), value.to_owned()))
            .map(|_| ())
    }

    /// Removes a value; `Ok(false)` if it was not set.
    pub fn delete(&self, name: &str) -> Result<bool, SecretError> {
        self.run(name, KeychainOp::Delete(name.to_owned()))
            .map(|r| r.is_some())
    }

    /// Whether a value is set (never returns it).
    pub fn is_set(&self, name: &str) -> Result<bool, SecretError> {
        match self.get(name) {
            Ok(_) => Ok(true),
            Err(SecretError::Missing { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl SecretSource for KeychainStore {
    fn get(&self, name: &str) -> Result<String, SecretError> {
        self.run(name, KeychainOp::Get(name.to_owned()))?
            .ok_or_else(|| SecretError::Missing {
                name: name.to_owned(),
            })
    }
}

fn keychain_error(name: &str, e: keyring::Error) -> SecretError {
    match e {
        keyring::Error::NoEntry => SecretError::Missing {
            name: name.to_owned(),
        },
        keyring::Error::NoDefaultStore
        | keyring::Error::NoStorageAccess(_)
        | keyring::Error::PlatformFailure(_) => {
            let fix = if cfg!(target_os = "linux") {
                "no keychain is reachable: Gatehouse keeps secrets in a Secret Service (GNOME Keyring or KWallet) on the session D-Bus; start one (or run inside a desktop session) and restart Gatehouse"
            } else {
                "the system keychain is not reachable; unlock it and try again"
            };
            SecretError::Unavailable {
                name: name.to_owned(),
                reason: fix.to_owned(),
            }
        }
        other => SecretError::Unavailable {
            name: name.to_owned(),
            reason: format!("the keychain refused: {other}"),
        },
    }
}

fn keychain_get(name: &str) -> Result<String, SecretError> {
    keyring::Entry::new(KEYCHAIN_SERVICE, name)
        .and_then(|e| e.get_password())
        .map_err(|e| keychain_error(name, e))
}

fn keychain_set(name: &str, value: &str) -> Result<(), SecretError> {
    keyring::Entry::new(KEYCHAIN_SERVICE, name)
        .and_then(|e| e.set_password(value))
        .map_err(|e| keychain_error(name, e))
}

fn keychain_delete(name: &str) -> Result<bool, SecretError> {
    match keyring::Entry::new(KEYCHAIN_SERVICE, name).and_then(|e| e.delete_credential()) {
        Ok(()) => Ok(true),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(e) => Err(keychain_error(name, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_raw_and_json_escaped_values_but_not_tiny_ones() {
        let r = Redactions::default();
        r.register("token", "sk-\"live\"-123");
        r.register("pin", "12");
        assert_eq!(r.mask("key sk-\"live\"-123 end"), "key [secret:token] end");
        assert_eq!(
            r.mask(r#"{"k":"sk-\"live\"-123"}"#),
            r#"{"k":"[secret:token]"}"#
        );
        assert_eq!(r.mask("pin 12"), "pin 12");
    }

    /// A relayed line: every secret masked but the ones the entry hands over; a line holding
    /// none comes back as it was.
    /// A refreshed token replaces the old one (the old one no longer masked, the new one is);
    /// a table of tokens is replaced by its prefix, leaving the other names alone.
    #[test]
    fn replaced_values_are_masked_and_the_old_ones_forgotten() {
        let r = Redactions::default();
        r.register("oauth:a", "old-token-0001");
        r.register("other", "other-secret-01");
        r.replace("oauth:a", &["new-token-0002"]);
        // Alone in a line: found by the one-pass search, made again with the new value.
        assert_eq!(r.mask("new-token-0002"), "[secret:oauth:a]");
        assert_eq!(
            r.mask("old-token-0001 new-token-0002 other-secret-01"),
            "old-token-0001 [secret:oauth:a] [secret:other]"
        );
        r.register("own:client:x", "client-token-x1");
        r.replace_all(
            "own:client:",
            &[("own:client:y".into(), "client-token-y2".into())],
        );
        assert_eq!(r.mask("client-token-y2"), "[secret:own:client:y]");
        assert_eq!(
            r.mask("client-token-x1 client-token-y2 other-secret-01"),
            "client-token-x1 [secret:own:client:y] [secret:other]"
        );
    }

    #[test]
    fn relayed_lines_are_masked_but_for_the_secrets_handed_over() {
        let r = Redactions::default();
        r.register("api-key", "sk-live-0123456789");
        r.register("shared-link", "https://share.example/abcdef");
        let line = br#"{"result":{"content":[{"text":"key sk-live-0123456789 at https://share.example/abcdef"}]}}"#.to_vec();
        let masked = String::from_utf8(r.mask_line(line.clone(), &["shared-link".into()])).unwrap();
        assert!(
            masked.contains("[secret:api-key]") && !masked.contains("sk-live"),
            "{masked}"
        );
        assert!(masked.contains("https://share.example/abcdef"), "{masked}");
        let clean = b"{\"result\":{}}".to_vec();
        assert_eq!(r.mask_line(clean.clone(), &[]), clean);
    }

    /// A reference base64 encoder, independent of the one under test.
    fn b64(data: &[u8], alphabet: &[u8; 64]) -> String {
        let mut out = String::new();
        let mut bits = 0u32;
        let mut n = 0;
        for &byte in data {
            bits = (bits << 8) | u32::from(byte);
            n += 8;
            while n >= 6 {
                n -= 6;
                out.push(alphabet[((bits >> n) & 63) as usize] as char);
            }
        }
        if n > 0 {
            out.push(alphabet[((bits << (6 - n)) & 63) as usize] as char);
        }
        out
    }

    #[test]
    fn encoded_forms_are_found_inside_longer_texts() {
        const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let secret = "s3cr3t/Value+With?Odd&Chars=€";
        let r = Redactions::default();
        r.register("k", secret);
        for prefix in ["", "u", "us", "user:", "Basic x"] {
            for alphabet in [STD, URL] {
                let whole = format!("{prefix}{secret}-and-more");
                let text = format!("auth {} end", b64(whole.as_bytes(), alphabet));
                let masked = r.mask(&text);
                assert!(
                    masked.contains("[secret:k]"),
                    "{prefix:?}: {text} -> {masked}"
                );
            }
        }
        let url = forms::percent_encode(secret, false, "");
        assert_eq!(r.mask(&format!("?q={url}&x")), "?q=[secret:k]&x");
        let lower = forms::percent_encode(secret, true, "");
        assert_ne!(lower, url);
        assert_eq!(r.mask(&format!("?q={lower}")), "?q=[secret:k]");
    }

    /// However a server's language escapes a value in JSON — `\/`, every character `\u`, some
    /// of them, Go's HTML escapes, Python's `ensure_ascii` — or encodes it (Python's `quote()`,
    /// hex), it is masked; other escapes in the same line are kept.
    #[test]
    fn a_value_is_masked_in_every_escape_a_server_writes() {
        let secret = "ghp_tok/en<&>é-0123";
        let r = Redactions::default();
        r.register("k", secret);
        let all: String = secret
            .encode_utf16()
            .map(|u| format!("\\u{u:04x}"))
            .collect();
        let rest = crate::jsonrpc::json_string(&secret[10..]);
        let mixed = format!("\\u0067hp_tok\\/en{}", rest.trim_matches('"'));
        for text in [
            format!(r#"{{"a":"x{}y","n":"l\nine"}}"#, secret.replace('/', "\\/")),
            format!(r#"{{"a":"{all}","n":"l\nine"}}"#),
            format!(
                r#"{{"a":"{}","n":"l\nine"}}"#,
                all.to_uppercase().replace("\\U", "\\u")
            ),
            format!(r#"{{"a":"{mixed}","n":"l\nine"}}"#),
            r#"{"a":"ghp_tok/en\u003c\u0026\u003e\u00e9-0123","n":"l\nine"}"#.to_owned(),
        ] {
            let out = String::from_utf8(r.mask_line(text.clone().into_bytes(), &[])).unwrap();
            assert!(out.contains("[secret:k]"), "{text} -> {out}");
            assert!(!out.contains("0123"), "{text} -> {out}");
            assert!(out.contains(r#""n":"l\nine""#), "{text} -> {out}");
            assert!(
                serde_json::from_str::<serde_json::Value>(&out).is_ok(),
                "{out}"
            );
        }
        for text in [
            "token=ghp_tok/en%3C%26%3E%C3%A9-0123".to_owned(),
            "hex 6768705f746f6b2f656e3c263ec3a92d30313233".to_owned(),
            "HEX 6768705F746F6B2F656E3C263EC3A92D30313233".to_owned(),
        ] {
            let out = r.mask(&text);
            assert!(
                out.contains("[secret:k]") && !out.contains("0123"),
                "{text} -> {out}"
            );
        }
    }
}
