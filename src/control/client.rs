//! The CLI's side of the control socket: one request per connection, answers read as the types
//! the hub sent (`ServerStatus`, `ToolInfo`…), never as loose JSON.

use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::{write_line, ControlError, Request, Response};

/// The CLI side: a connection to a running hub.
pub struct ControlClient {
    path: PathBuf,
    /// How long a read-only request waits for its first answer.
    quick: std::time::Duration,
}

impl ControlClient {
    /// A client of the hub listening at `path`.
    pub fn new(path: PathBuf) -> Self {
        ControlClient {
            path,
            quick: super::QUICK_ANSWER,
        }
    }

    /// The same client, waiting `quick` instead of [`super::QUICK_ANSWER`] for the first answer
    /// to a read-only request.
    pub fn with_quick_deadline(mut self, quick: std::time::Duration) -> Self {
        self.quick = quick;
        self
    }

    /// The socket this client talks to.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Sends one request and reads its answer as `T`; a refusal is [`ControlError::Refused`]
    /// with the hub's message.
    pub async fn request<T: DeserializeOwned>(&self, req: &Request) -> Result<T, ControlError> {
        let resp = self.call(req).await?;
        answer(resp)
    }

    /// Sends one request and hands `first` the first answer (as `T`), then `each` every later
    /// line (as `U`) until either returns false or the hub closes.
    pub async fn follow<T: DeserializeOwned, U: DeserializeOwned>(
        &self,
        req: &Request,
        first: impl FnOnce(T) -> bool,
        mut each: impl FnMut(U) -> bool,
    ) -> Result<(), ControlError> {
        // `_w` keeps our write half open: the hub sees EOF only when we go away (ends a follow).
        let (mut lines, _w) = self.open(req).await?;
        let Some(resp) = self.first(&mut lines, req).await? else {
            return Err(ControlError::Protocol(
                "the hub closed the connection without answering".into(),
            ));
        };
        if !first(answer(resp)?) {
            return Ok(());
        }
        while let Some(line) = self.next_value(&mut lines).await? {
            let item: U =
                serde_json::from_value(line).map_err(|e| ControlError::Protocol(e.to_string()))?;
            if !each(item) {
                break;
            }
        }
        Ok(())
    }

    /// Sends one request and returns the first response line.
    pub async fn call(&self, req: &Request) -> Result<Response, ControlError> {
        let (mut lines, _w) = self.open(req).await?;
        self.first(&mut lines, req).await?.ok_or_else(|| {
            ControlError::Protocol("the hub closed the connection without answering".into())
        })
    }

    /// Sends one request and calls `each` for every response line until the hub closes.
    pub async fn stream(
        &self,
        req: &Request,
        mut each: impl FnMut(Value) -> bool,
    ) -> Result<(), ControlError> {
        // `_w` keeps our write half open: the hub sees EOF only when we go away (ends a follow).
        let (mut lines, _w) = self.open(req).await?;
        while let Some(line) = self.next_value(&mut lines).await? {
            if !each(line) {
                break;
            }
        }
        Ok(())
    }

    #[cfg(unix)]
    async fn open(
        &self,
        req: &Request,
    ) -> Result<
        (
            tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
            tokio::net::unix::OwnedWriteHalf,
        ),
        ControlError,
    > {
        let stream = tokio::net::UnixStream::connect(&self.path)
            .await
            .map_err(|_| ControlError::NotRunning(self.path.clone()))?;
        // Only a hub of our own user is trusted: another user's process on a socket path we
        // were pointed at could answer with a fake tool list or gateway.
        let me = nix::unistd::getuid().as_raw();
        let peer = stream.peer_cred().map_err(|source| ControlError::Io {
            path: self.path.clone(),
            source,
        })?;
        if peer.uid() != me {
            return Err(ControlError::Untrusted {
                path: self.path.clone(),
                uid: peer.uid(),
            });
        }
        let (r, mut w) = stream.into_split();
        write_line(&mut w, req)
            .await
            .map_err(|source| ControlError::Io {
                path: self.path.clone(),
                source,
            })?;
        Ok((BufReader::new(r).lines(), w))
    }

    #[cfg(not(unix))]
    async fn open(
        &self,
        _req: &Request,
    ) -> Result<(tokio::io::Lines<BufReader<tokio::io::Empty>>, ()), ControlError> {
        Err(ControlError::Unsupported)
    }

    /// The first answer, within the request's deadline when it has one.
    async fn first<R: tokio::io::AsyncBufRead + Unpin>(
        &self,
        lines: &mut tokio::io::Lines<R>,
        req: &Request,
    ) -> Result<Option<Response>, ControlError> {
        match req.answer_deadline().map(|_| self.quick) {
            None => self.next(lines).await,
            Some(limit) => tokio::time::timeout(limit, self.next(lines))
                .await
                .map_err(|_| ControlError::Silent {
                    path: self.path.clone(),
                    secs: limit.as_secs_f64().ceil() as u64,
                })?,
        }
    }

    async fn next<R: tokio::io::AsyncBufRead + Unpin>(
        &self,
        lines: &mut tokio::io::Lines<R>,
    ) -> Result<Option<Response>, ControlError> {
        match self.next_value(lines).await? {
            Some(v) => serde_json::from_value(v)
                .map(Some)
                .map_err(|e| ControlError::Protocol(e.to_string())),
            None => Ok(None),
        }
    }

    async fn next_value<R: tokio::io::AsyncBufRead + Unpin>(
        &self,
        lines: &mut tokio::io::Lines<R>,
    ) -> Result<Option<Value>, ControlError> {
        match lines.next_line().await {
            Ok(Some(l)) => serde_json::from_str(&l)
                .map(Some)
                .map_err(|e| ControlError::Protocol(e.to_string())),
            Ok(None) => Ok(None),
            Err(source) => Err(ControlError::Io {
                path: self.path.clone(),
                source,
            }),
        }
    }
}

fn answer<T: DeserializeOwned>(resp: Response) -> Result<T, ControlError> {
    if !resp.ok {
        return Err(ControlError::Refused {
            kind: resp.error_kind,
            message: resp
                .error
                .unwrap_or_else(|| "the hub refused the request".into()),
        });
    }
    serde_json::from_value(resp.result.unwrap_or(Value::Null))
        .map_err(|e| ControlError::Protocol(e.to_string()))
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    /// A socket that takes the request and never answers is a stuck hub: a read-only request
    /// ends at its deadline with an error that says so, never hangs.
    #[tokio::test]
    async fn a_hub_that_never_answers_is_reported_within_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("control.sock");
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        let held = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
            drop(stream);
        });
        let client = ControlClient::new(path.clone())
            .with_quick_deadline(std::time::Duration::from_millis(200));
        let started = std::time::Instant::now();
        let e = client.call(&Request::Status).await.unwrap_err();
        assert!(matches!(e, ControlError::Silent { .. }), "{e}");
        assert!(e.to_string().contains("did not answer within 1 s"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        held.abort();
    }
}
