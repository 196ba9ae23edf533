//! What the watch remembers between runs, so a change made while Gatehouse was not running is
//! found at its next start: `DATA/client-files/index.json` (each watched path: the digest of
//! what is there now, of what was last accepted, and the open alert) and the accepted content of
//! each file, `DATA/client-files/<digest of the path>.kept` — the restore point. The directory is
//! 0700 inside the data dir (closed to every confined server), each file 0600.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ClientFileAlert;

/// One watched path.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// The digest of the file's bytes as last read (`None`: it did not exist).
    pub sha: Option<String>,
    /// The digest of the content last accepted — kept in the `.kept` file (`None`: the file
    /// did not exist then).
    pub kept: Option<String>,
    /// The change not yet restored or acknowledged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert: Option<ClientFileAlert>,
}

/// Every watched path's entry.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Index {
    /// By path.
    pub files: BTreeMap<PathBuf, Entry>,
}

/// The directory of the records.
#[derive(Debug, Clone)]
pub struct Records {
    dir: PathBuf,
}

/// The digest of some bytes, in hex.
pub fn sha(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

impl Records {
    /// The records in `dir` (made 0700 at the first save).
    pub fn at(dir: PathBuf) -> Self {
        Records { dir }
    }

    fn index_path(&self) -> PathBuf {
        self.dir.join("index.json")
    }

    fn kept_path(&self, path: &Path) -> PathBuf {
        let name = sha(path.as_os_str().as_encoded_bytes());
        self.dir.join(format!("{}.kept", &name[..32]))
    }

    /// The index as last saved; `None` when there is none (the watch's first run) or it does
    /// not read (then every file is taken as it is, again).
    pub fn load(&self) -> Option<Index> {
        let text = crate::client_file::read(&self.index_path()).ok()?;
        match serde_json::from_str(&text) {
            Ok(i) => Some(i),
            Err(e) => {
                tracing::warn!("client files: the watch's index does not read ({e}); every file is taken as it is now");
                None
            }
        }
    }

    /// Saves the index.
    pub fn save(&self, index: &Index) -> std::io::Result<()> {
        crate::private::create_dir(&self.dir)?;
        let text = serde_json::to_vec(index).map_err(std::io::Error::other)?;
        crate::config::write_atomic(&self.index_path(), &text)
    }

    /// Keeps `bytes` as the accepted content of `path` (`None`: it does not exist).
    pub fn keep(&self, path: &Path, bytes: Option<&[u8]>) -> std::io::Result<()> {
        let kept = self.kept_path(path);
        match bytes {
            Some(b) => {
                crate::private::create_dir(&self.dir)?;
                crate::config::write_atomic(&kept, b)
            }
            None => match std::fs::remove_file(&kept) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
        }
    }

    /// The accepted content of `path`, when it is kept and still what `digest` says.
    pub fn kept(&self, path: &Path, digest: &str) -> Option<Vec<u8>> {
        let bytes = crate::client_file::read_bytes(&self.kept_path(path)).ok()?;
        (sha(&bytes) == digest).then_some(bytes)
    }
}
