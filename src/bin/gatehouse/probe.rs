//! `gatehouse test`: one server started on its own and reported on — from the config or a
//! command line — and with `--compare`, started confined and unconfined with the difference said.

use std::path::PathBuf;
use std::time::Duration;

use gatehouse::config::{self, Config};
use gatehouse::control::{ControlClient, Request};
use serde_json::json;

pub use crate::args::TestArgs;

/// Why `test` did not run: bad usage (exit 2) or a server that is not there (exit 1).
pub enum TestError {
    Usage(String),
    Unknown(String),
}

/// The config `test ID` reads: `--config`, else the running hub's, else the default path.
async fn config_for_test(client: &ControlClient, given: Option<PathBuf>) -> PathBuf {
    if let Some(p) = given {
        return p;
    }
    match client
        .request::<Option<PathBuf>>(&Request::ConfigPath)
        .await
    {
        Ok(Some(p)) => p,
        _ => config::default_config_path(),
    }
}

/// `gatehouse test`: the server from the config (or the command given) started on its own and
/// reported on. Exit 1 when it is not ready.
pub async fn test(client: &ControlClient, a: TestArgs) -> Result<bool, TestError> {
    use serde::Deserialize;
    let mut min_age = Config::default().registry.min_age_days();
    let (id, server) = match (a.id, a.command.split_first()) {
        (Some(_), Some(_)) => {
            return Err(TestError::Usage(
                "give either an ID from the config or -- COMMAND ARGS, not both".into(),
            ))
        }
        (None, None) => {
            return Err(TestError::Usage(
                "test what? `gatehouse test ID` (from the config) or `gatehouse test -- COMMAND ARGS...`"
                    .into(),
            ))
        }
        (Some(id), None) => {
            let path = config_for_test(client, a.config).await;
            let c = Config::load(&path).map_err(|e| TestError::Usage(e.to_string()))?;
            min_age = c.registry.min_age_days();
            let key = config::ServerId::parse(&id).map_err(TestError::Usage)?;
            let server = c.servers.get(&key).cloned().ok_or_else(|| {
                TestError::Unknown(format!(
                    "{} in {}; add it with `gatehouse add {id} -- COMMAND`, or test a command with `gatehouse test -- COMMAND`",
                    c.unknown_server(&id),
                    path.display()
                ))
            })?;
            (id, server)
        }
        (None, Some((command, args))) => {
            let entry = json!({"command": command, "args": args});
            let server = config::ServerConfig::deserialize(&entry)
                .map_err(|e| TestError::Usage(config::readable(&e.to_string())))?;
            ("test".to_owned(), server)
        }
    };
    let secrets: std::sync::Arc<dyn gatehouse::secrets::SecretSource> =
        if server.secret_refs().is_empty() {
            std::sync::Arc::new(gatehouse::secrets::NoSecretStore)
        } else {
            std::sync::Arc::new(gatehouse::secrets::KeychainStore::start())
        };
    let timeout = Duration::from_secs(a.timeout);
    // What Save would run: a package pinned and run from the store Gatehouse installs into.
    let from = gatehouse::probe::FromStore {
        store: crate::install::store(client).await,
        min_age_days: min_age,
    };
    if a.compare {
        let c = gatehouse::probe::compare::compare(&id, server, secrets, timeout, Some(&from))
            .await
            .map_err(TestError::Usage)?;
        if a.json {
            crate::print::json(&c);
        } else {
            use gatehouse::probe::compare::line;
            say!("confined: {}", line(&c.confined));
            say!("unconfined: {}", line(&c.unconfined));
            say!("{}", c.difference);
        }
        return Ok(c.ok);
    }
    let report = gatehouse::probe::probe(&id, server, secrets, timeout, Some(&from)).await;
    if a.json {
        crate::print::json(&report);
    } else {
        crate::print::probe(&report);
    }
    Ok(report.ok)
}
