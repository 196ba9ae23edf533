//! Bearer tokens — a noun the gateway, the client profiles and the CLI share: 256 random bits
//! from the OS CSPRNG, compared in constant time; the gateway's own token (`GATEHOUSE_TOKEN`, else
//! the keychain, else `DATA_DIR/gateway-token` at mode 0600).

use std::path::{Path, PathBuf};

/// The name prefix under which Gatehouse's own tokens are known to the redactions (a server's
/// environment holding one is refused; the names say whose).
pub const OWN_TOKEN: &str = "gatehouse-token:";
/// The gateway token's name among them.
pub const OWN_TOKEN_GATEWAY: &str = "gatehouse-token:gateway";

/// Env var that overrides the stored token.
pub const TOKEN_ENV: &str = "GATEHOUSE_TOKEN";
const TOKEN_FILE: &str = "gateway-token";

/// Why the gateway token could not be had.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// Its file could not be read or written.
    #[error("cannot read or create the gateway token {path}: {source}")]
    Io {
        /// The token file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The OS's random source failed.
    #[error("the operating system's random source failed: {0}")]
    Random(String),
    /// `GATEHOUSE_TOKEN` is too short to be a secret.
    #[error("{TOKEN_ENV} is too short: use at least 32 characters (256 bits as hex is 64)")]
    TooShort,
}

/// `n` random bytes from the OS CSPRNG, as lowercase hex.
pub fn random_hex(n: usize) -> String {
    try_random_hex(n).unwrap_or_else(|_| {
        // Only session ids use this path; the token uses `try_random_hex` and fails loudly.
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(&format!("{:02x}", fastrand::u8(..)));
        }
        s
    })
}

fn try_random_hex(n: usize) -> Result<String, TokenError> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).map_err(|e| TokenError::Random(e.to_string()))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// The keychain entry holding the token.
pub const KEYCHAIN_NAME: &str = crate::config::GATEWAY_TOKEN_SECRET;

/// The token clients must present: `GATEHOUSE_TOKEN`, else the one in the keychain (created on
/// first start). Without a reachable keychain it is kept in `DATA_DIR/gateway-token` (0600) and
/// a warning says so. Blocking: call from a blocking context.
pub fn load_or_create_in_keychain(
    keychain: &crate::secrets::KeychainStore,
    data_dir: &Path,
) -> Result<String, TokenError> {
    use crate::secrets::{SecretError, SecretSource};
    if let Some(t) = env_token()? {
        return Ok(t);
    }
    match keychain.get(KEYCHAIN_NAME) {
        Ok(t) if t.len() >= 32 => return Ok(t),
        Ok(_) | Err(SecretError::Missing { .. }) => {
            let token = try_random_hex(32)?;
            match keychain.set(KEYCHAIN_NAME, &token) {
                Ok(()) => return Ok(token),
                Err(e) => tracing::warn!("{e}"),
            }
        }
        Err(e) => tracing::warn!("{e}"),
    }
    tracing::warn!(
        "the gateway token is kept in {} (mode 0600) because no keychain is reachable; set GATEHOUSE_TOKEN or run a Secret Service to keep it in the keychain",
        data_dir.join(TOKEN_FILE).display()
    );
    load_or_create(data_dir)
}

fn env_token() -> Result<Option<String>, TokenError> {
    match std::env::var(TOKEN_ENV) {
        Ok(t) if !t.is_empty() && t.len() < 32 => Err(TokenError::TooShort),
        Ok(t) if !t.is_empty() => Ok(Some(t)),
        _ => Ok(None),
    }
}

/// The token clients must present: `GATEHOUSE_TOKEN`, else the one in `DATA_DIR/gateway-token`,
/// else a new one written there (mode 0600).
pub fn load_or_create(data_dir: &Path) -> Result<String, TokenError> {
    if let Some(t) = env_token()? {
        return Ok(t);
    }
    let path = data_dir.join(TOKEN_FILE);
    let io = |source| TokenError::Io {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(t) if t.trim().len() >= 64 => return Ok(t.trim().to_owned()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    let token = try_random_hex(32)?;
    crate::private::create_dir(data_dir).map_err(io)?;
    write_private(&path, &token).map_err(io)?;
    Ok(token)
}

/// A fresh token: 256 random bits as hex, from the OS CSPRNG.
pub fn new_token() -> Result<String, TokenError> {
    try_random_hex(32)
}

/// Writes a token file readable by its owner only (0600), atomically.
pub fn write_token_file(path: &Path, token: &str) -> std::io::Result<()> {
    write_private(path, token)
}

#[cfg(unix)]
fn write_private(path: &Path, token: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(token.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(not(unix))]
fn write_private(path: &Path, token: &str) -> std::io::Result<()> {
    crate::config::write_atomic(path, token.as_bytes())
}

/// Compares in time independent of where the inputs differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_256_bits_stable_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let t1 = load_or_create(dir.path()).unwrap();
        assert_eq!(t1.len(), 64);
        assert!(t1.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(load_or_create(dir.path()).unwrap(), t1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(TOKEN_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let other = tempfile::tempdir().unwrap();
        assert_ne!(load_or_create(other.path()).unwrap(), t1);
    }

    #[test]
    fn compare() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
