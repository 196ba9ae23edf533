//! Where secret references (`{"secret": "NAME"}`) get their values. The keychain-backed store
//! arrives with the secrets issue; until then the hub runs with [`NoSecretStore`], which makes any
//! server that needs a secret fail with a message saying so (never a plaintext fallback).

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("secret {name} is not set — run `gatehouse secret set {name}`")]
    Missing { name: String },
    #[error("secret {name} cannot be read: {reason}")]
    Unavailable { name: String, reason: String },
}

/// A source of secret values. Called at spawn/connect time only, from a blocking thread.
pub trait SecretSource: Send + Sync {
    fn get(&self, name: &str) -> Result<String, SecretError>;
}

/// No secret store: every lookup fails with a clear reason.
#[derive(Debug, Default)]
pub struct NoSecretStore;

impl SecretSource for NoSecretStore {
    fn get(&self, name: &str) -> Result<String, SecretError> {
        Err(SecretError::Unavailable {
            name: name.to_owned(),
            reason: "this build of Gatehouse has no keychain support yet; put the value in the server's \"env\" as a plain string for now".into(),
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
    /// (name, form of the value to find). Guards one registration or one masking pass.
    values: std::sync::RwLock<Vec<(String, String)>>,
}

/// Values shorter than this are not masked: masking "a" would mangle every text.
const MIN_MASKED_LEN: usize = 4;

impl Redactions {
    pub fn register(&self, name: &str, value: &str) {
        if value.len() < MIN_MASKED_LEN {
            return;
        }
        // Also the JSON-escaped form: arguments and events are JSON text.
        let escaped = crate::jsonrpc::json_string(value);
        let escaped = escaped[1..escaped.len() - 1].to_owned();
        let mut v = self.values.write().unwrap_or_else(|e| e.into_inner());
        for form in [value.to_owned(), escaped] {
            if !v.iter().any(|(n, f)| n == name && *f == form) {
                v.push((name.to_owned(), form));
            }
        }
        // Longest first, so a value containing another is masked whole.
        v.sort_by_key(|(_, f)| std::cmp::Reverse(f.len()));
    }

    pub fn mask(&self, text: &str) -> String {
        let v = self.values.read().unwrap_or_else(|e| e.into_inner());
        let mut out = text.to_owned();
        for (name, form) in v.iter() {
            if out.contains(form.as_str()) {
                out = out.replace(form.as_str(), &format!("[secret:{name}]"));
            }
        }
        out
    }
}

impl crate::activity::Redactor for Redactions {
    fn redact(&self, text: &str) -> String {
        self.mask(text)
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
}
