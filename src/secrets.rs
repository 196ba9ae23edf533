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
