//! Reading a file another program owns — an AI client's config, a manifest a person points
//! `import` at — without trusting what is at the path: regular files only (a FIFO would block
//! the open, `/dev/zero` never ends), at most [`MAX_CLIENT_FILE`] bytes, within
//! [`READ_DEADLINE`] (a file on a stalled network mount).

use std::path::Path;

pub mod backup;
pub mod edit;
pub mod lock;

/// The largest client file read.
pub const MAX_CLIENT_FILE: u64 = 8 << 20;
/// How long one client file may take to read.
pub const READ_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// Why a client file was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// Nothing is at the path.
    #[error("{0} does not exist")]
    Missing(String),
    /// Something other than a regular file is.
    #[error("{path} is {what}, not a regular file: point at the client's config file itself")]
    NotAFile {
        /// The path.
        path: String,
        /// What it is.
        what: &'static str,
    },
    /// The file is larger than a client's config would be.
    #[error("{0} is larger than 8 MiB: no client writes a config that large; check the path")]
    TooLarge(String),
    /// The read did not finish in time.
    #[error("{0} could not be read within 5 s (a stalled mount?)")]
    TooSlow(String),
    /// The read failed.
    #[error("cannot read {path}: {why}")]
    Io {
        /// The path.
        path: String,
        /// Why.
        why: String,
    },
}

/// Reads the text of the client file at `path`, within the bounds above: UTF-8, its byte-order
/// mark (Windows editors write one) taken off.
pub fn read(path: &Path) -> Result<String, ReadError> {
    let bytes = read_bytes(path)?;
    let text = String::from_utf8(bytes).map_err(|_| ReadError::Io {
        path: path.display().to_string(),
        why: "it is not UTF-8 text".into(),
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    })
}

/// The bytes of the client file at `path`, within the bounds above.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, ReadError> {
    let shown = path.display().to_string();
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let owned = path.to_owned();
    // The read runs on a thread of its own so that a stalled mount costs the caller the
    // deadline, not forever (the thread ends when the read does).
    let spawned = std::thread::Builder::new()
        .name("client-file".into())
        .spawn(move || {
            let _ = tx.send(read_now(&owned));
        });
    if let Err(e) = spawned {
        return Err(ReadError::Io {
            path: shown,
            why: e.to_string(),
        });
    }
    match rx.recv_timeout(READ_DEADLINE) {
        Ok(r) => r,
        Err(_) => Err(ReadError::TooSlow(shown)),
    }
}

fn read_now(path: &Path) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let shown = || path.display().to_string();
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::Missing(shown()),
        _ => ReadError::Io {
            path: shown(),
            why: e.to_string(),
        },
    };
    // Looked at before it is opened: opening a FIFO waits for a writer.
    let meta = std::fs::metadata(path).map_err(io)?;
    check_kind(&meta, path)?;
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    #[cfg(unix)]
    {
        // Swapped for a FIFO since: the open does not wait.
        use std::os::unix::fs::OpenOptionsExt;
        open.custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits());
    }
    let file = open.open(path).map_err(io)?;
    check_kind(&file.metadata().map_err(io)?, path)?;
    let mut bytes = Vec::new();
    file.take(MAX_CLIENT_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_CLIENT_FILE {
        return Err(ReadError::TooLarge(shown()));
    }
    Ok(bytes)
}

fn check_kind(meta: &std::fs::Metadata, path: &Path) -> Result<(), ReadError> {
    if meta.is_file() {
        return if meta.len() > MAX_CLIENT_FILE {
            Err(ReadError::TooLarge(path.display().to_string()))
        } else {
            Ok(())
        };
    }
    let ft = meta.file_type();
    #[cfg(unix)]
    let what = {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_char_device() || ft.is_block_device() {
            "a device"
        } else if ft.is_socket() {
            "a socket"
        } else if ft.is_dir() {
            "a directory"
        } else {
            "not a file"
        }
    };
    #[cfg(not(unix))]
    let what = if ft.is_dir() {
        "a directory"
    } else {
        "not a file"
    };
    Err(ReadError::NotAFile {
        path: path.display().to_string(),
        what,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_and_anything_else_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("mcp.json");
        std::fs::write(&f, "{\"mcpServers\":{}}").unwrap();
        assert_eq!(read(&f).unwrap(), "{\"mcpServers\":{}}");
        assert!(matches!(
            read(dir.path()),
            Err(ReadError::NotAFile {
                what: "a directory",
                ..
            })
        ));
        assert!(matches!(
            read(&dir.path().join("none")),
            Err(ReadError::Missing(_))
        ));
        let started = std::time::Instant::now();
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo");
            nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
            assert!(matches!(
                read(&fifo),
                Err(ReadError::NotAFile { what: "a FIFO", .. })
            ));
            assert!(matches!(
                read(Path::new("/dev/zero")),
                Err(ReadError::NotAFile {
                    what: "a device",
                    ..
                })
            ));
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        let big = dir.path().join("big.json");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_CLIENT_FILE + 1).unwrap();
        assert!(matches!(read(&big), Err(ReadError::TooLarge(_))));
    }
}
