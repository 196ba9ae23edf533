//! The verbs that talk to a running hub over the control socket (and `secret`, which talks to the
//! keychain, and `connect`, the stdio bridge). Answers are read as the hub's own types.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use gatehouse::activity::CallRecord;
use gatehouse::approval::ApprovalRequest;
use gatehouse::config::{self, Config};
use gatehouse::control::{ControlClient, ControlError, Forgotten, GatewayInfo, Request};
use gatehouse::hub::ToolInfo;
use gatehouse::logs::LogLine;
use gatehouse::ServerStatus;

use crate::args::{Cmd, SecretCmd};
use crate::import;
use crate::manage;
use crate::print;
use crate::probe;

pub async fn run(verb: Cmd, control_path: PathBuf) -> ExitCode {
    let client = ControlClient::new(control_path);
    let result = match verb {
        Cmd::Serve { .. } | Cmd::Connect { .. } => return ExitCode::from(2),
        Cmd::Import {
            from,
            config,
            dry_run,
            move_secrets,
            rename,
        } => {
            let args = import::ImportArgs {
                from,
                config,
                dry_run,
                move_secrets,
                renames: rename,
            };
            import::import(args, &client).await
        }
        Cmd::ClientConfig {
            target,
            write,
            replace_imported,
            file,
            client: profile,
        } => {
            let args = import::ClientConfigArgs {
                target,
                client: profile,
                write,
                replace_imported,
                file,
            };
            import::client_config(args, &client).await
        }
        Cmd::Approvals {
            json,
            forget: Some(target),
            ..
        } => ask::<Forgotten>(&client, Request::Forget { target })
            .await
            .map(|f| {
                if json {
                    print::json(&f);
                } else {
                    say!("forgot {} remembered approval(s)", f.forgotten);
                }
            }),
        Cmd::Approvals {
            json, grants: true, ..
        } => ask::<Vec<gatehouse::approval::Grant>>(&client, Request::Grants)
            .await
            .map(|rows| {
                if json {
                    print::json(&rows);
                } else {
                    print::grants(&rows);
                }
            }),
        Cmd::Approvals { json, .. } => ask::<Vec<ApprovalRequest>>(&client, Request::Approvals)
            .await
            .map(|rows| {
                if json {
                    print::json(&rows);
                } else {
                    print::approvals(&rows);
                }
            }),
        Cmd::Secret { cmd } => secret(&client, cmd).await,
        Cmd::Auth { cmd } => auth(&client, cmd).await,
        Cmd::Clients { cmd, json } => manage::clients(&client, cmd, json).await,
        Cmd::Activity {
            json,
            csv,
            decision,
            limit,
            server,
            client: profile,
        } => ask::<Vec<CallRecord>>(
            &client,
            Request::Activity {
                limit: Some(limit),
                server,
                client: profile,
            },
        )
        .await
        .map(|mut rows| {
            if let Some(group) = decision {
                rows.retain(|r| r.decision.group().as_str() == group);
            }
            if json {
                print::json(&rows);
            } else if csv {
                print::out(&gatehouse::activity::export::csv(&rows));
            } else {
                print::activity(&rows);
            }
        }),
        Cmd::Approve { id, scope, digest } => ask::<ApprovalRequest>(
            &client,
            Request::Approve {
                id,
                scope: Some(scope),
                digest,
            },
        )
        .await
        .map(|r| {
            say!(
                "allowed {} ({scope:?})",
                gatehouse::text::reveal(&r.exposed)
            )
        }),
        Cmd::Deny { id, reason, digest } => {
            ask::<ApprovalRequest>(&client, Request::Deny { id, reason, digest })
                .await
                .map(|r| say!("denied {}", gatehouse::text::reveal(&r.exposed)))
        }
        Cmd::Status { json } => ask::<Vec<ServerStatus>>(&client, Request::Status)
            .await
            .map(|rows| {
                if json {
                    print::json(&rows);
                } else {
                    print::status_table(&rows);
                }
            }),
        Cmd::Start { id } => ask(&client, Request::Start { id }).await.map(print::one),
        Cmd::Stop { id } => ask(&client, Request::Stop { id }).await.map(print::one),
        Cmd::Restart { id: Some(id), .. } => {
            ask(&client, Request::Restart { id }).await.map(print::one)
        }
        Cmd::Restart { id: None, .. } => manage::restart_all(&client).await,
        Cmd::Add {
            id,
            registry,
            url,
            env,
            secret_env,
            header,
            secret_header,
            cwd,
            approval,
            sandbox,
            allow_read,
            allow_write,
            no_network,
            no_pin,
            allow_env,
            config,
            command,
        } => {
            let args = manage::AddArgs {
                sandbox: manage::SandboxArgs {
                    level: sandbox,
                    read: allow_read,
                    write: allow_write,
                    no_network,
                },
                id,
                registry,
                url,
                env,
                secret_env,
                header,
                secret_header,
                cwd,
                approval,
                config,
                command,
                pin: !no_pin,
                allow_env,
            };
            match args.registry.clone() {
                Some(spec) => crate::registry::add(&client, args, &spec).await,
                None => manage::add(&client, args).await,
            }
        }
        Cmd::Registry { cmd } => crate::registry::run(&client, cmd).await,
        Cmd::Pin {
            id,
            update,
            now,
            config,
        } => crate::registry::pin(&client, &id, (update, now), config).await,
        Cmd::Remove { id, config } => manage::remove(&client, id, config).await,
        Cmd::Enable { id, config } => manage::set_enabled(&client, id, true, config).await,
        Cmd::Disable { id, config } => manage::set_enabled(&client, id, false, config).await,
        Cmd::Test {
            id,
            timeout,
            config,
            json,
            compare,
            command,
        } => {
            let args = probe::TestArgs {
                id,
                timeout,
                config,
                json,
                command,
                compare,
            };
            return match probe::test(&client, args).await {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(probe::TestError::Unknown(msg)) => {
                    eprintln!("gatehouse: {msg}");
                    ExitCode::from(1)
                }
                Err(probe::TestError::Usage(msg)) => {
                    eprintln!("gatehouse: {msg}");
                    ExitCode::from(2)
                }
            };
        }
        Cmd::Reload => {
            let before = ask::<Vec<ServerStatus>>(&client, Request::Status).await;
            ask::<Vec<ServerStatus>>(&client, Request::Reload)
                .await
                .map(|after| {
                    if let Ok(before) = before {
                        print::reload_changes(&before, &after);
                    }
                    print::status_table(&after);
                })
        }
        Cmd::Tools {
            id,
            json,
            refresh,
            client: profile,
        } => {
            let one = id.clone();
            let shown_for = profile.clone();
            let req = match (refresh, id, profile) {
                (true, Some(id), None) => Request::RefreshTools { id },
                (refresh, id, profile) => {
                    if let (true, Some(id)) = (refresh, &id) {
                        let again = Request::RefreshTools { id: id.clone() };
                        if let Err(e) = ask::<Vec<ToolInfo>>(&client, again).await {
                            eprintln!("gatehouse: {e}");
                            return ExitCode::from(1);
                        }
                    }
                    Request::Tools {
                        id,
                        client: profile,
                    }
                }
            };
            match ask::<Vec<ToolInfo>>(&client, req).await {
                Ok(rows) if json => {
                    print::json(&rows);
                    Ok(())
                }
                Ok(rows) => {
                    // One server's tools: what it speaks, first.
                    if let Some(id) = one {
                        if let Ok(all) = ask::<Vec<ServerStatus>>(&client, Request::Status).await {
                            if let Some(s) = all.iter().find(|s| s.id == id) {
                                print::protocol_line(s);
                            }
                        }
                    }
                    print::tools_table(&rows, shown_for.as_deref());
                    Ok(())
                }
                Err(e) => Err(e),
            }
        }
        Cmd::Logs { id, follow, lines } => logs(&client, id, follow, lines).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("gatehouse: {msg}");
            ExitCode::from(1)
        }
    }
}

/// One request, its answer as `T`; any failure as the sentence to print.
/// `auth login` / `auth logout`: the hub does the work (it holds the keychain and the
/// connection); the CLI shows the authorization URL and waits for the outcome.
async fn auth(client: &ControlClient, cmd: crate::args::AuthCmd) -> Result<(), String> {
    use gatehouse::control::{SignInOutcome, SignedOut};
    use gatehouse::oauth::SignInStarted;
    match cmd {
        crate::args::AuthCmd::Login { id } => {
            let mut outcome: Option<SignInOutcome> = None;
            client
                .follow::<SignInStarted, SignInOutcome>(
                    &Request::AuthLogin { id: id.clone() },
                    |started| {
                        if started.opened {
                            say!("Opened your browser to sign in to {id}. If it did not open, visit:");
                        } else {
                            say!("Open this address in your browser to sign in to {id}:");
                        }
                        say!("  {}", started.url);
                        say!("Waiting for the sign-in (at most {} minutes)…", gatehouse::oauth::SIGN_IN_TIMEOUT.as_secs() / 60);
                        true
                    },
                    |o| {
                        outcome = Some(o);
                        false
                    },
                )
                .await
                .map_err(|e| e.to_string())?;
            match outcome {
                Some(SignInOutcome { ok: true, .. }) => {
                    say!("Signed in to {id}.");
                    Ok(())
                }
                Some(SignInOutcome { error, .. }) => {
                    Err(error.unwrap_or_else(|| "the sign-in failed".into()))
                }
                None => Err("the hub ended before the sign-in did".into()),
            }
        }
        crate::args::AuthCmd::Logout { id } => {
            let out: SignedOut = ask(client, Request::AuthLogout { id: id.clone() }).await?;
            match out.revoked {
                Some(true) => say!("Signed out of {id}: the tokens were revoked and deleted."),
                Some(false) => say!("Signed out of {id}: the tokens were deleted (the server did not confirm the revocation)."),
                None => say!("Signed out of {id}: the tokens were deleted (the server offers no revocation)."),
            }
            Ok(())
        }
    }
}

pub async fn ask<T: serde::de::DeserializeOwned>(
    client: &ControlClient,
    req: Request,
) -> Result<T, String> {
    client.request(&req).await.map_err(|e| e.to_string())
}

async fn logs(
    client: &ControlClient,
    id: String,
    follow: bool,
    lines: Option<usize>,
) -> Result<(), String> {
    client
        .follow(
            &Request::Logs { id, follow, lines },
            |snapshot: Vec<LogLine>| {
                for l in &snapshot {
                    print::log_line(l);
                }
                follow
            },
            |line: LogLine| {
                print::log_line(&line);
                true
            },
        )
        .await
        .map_err(|e| e.to_string())
}

/// `gatehouse connect`: the stdio bridge, with the URL and token asked from the running hub
/// unless given.
pub async fn connect(
    url: Option<String>,
    profile: Option<String>,
    control_path: PathBuf,
) -> ExitCode {
    gatehouse::service::init_tracing();
    // A profile's token comes from the hub, never from GATEHOUSE_TOKEN (the default's).
    let env_token = std::env::var(gatehouse::token::TOKEN_ENV)
        .ok()
        .filter(|t| !t.is_empty() && profile.is_none());
    let (url, token) = match (url, env_token) {
        (Some(u), Some(t)) => (u, t),
        (url, token) => {
            let client = ControlClient::new(control_path);
            match client
                .request::<GatewayInfo>(&Request::Gateway { client: profile })
                .await
            {
                Ok(i) => (url.unwrap_or(i.url), token.unwrap_or(i.token)),
                Err(e) => {
                    eprintln!("gatehouse connect: {e}");
                    return ExitCode::from(1);
                }
            }
        }
    };
    let input = tokio::io::stdin();
    match gatehouse::connect::run(url, token, input, tokio::io::stdout()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gatehouse connect: {e}");
            ExitCode::from(1)
        }
    }
}

async fn secret(client: &ControlClient, cmd: SecretCmd) -> Result<(), String> {
    let keychain = gatehouse::secrets::KeychainStore::start();
    match cmd {
        SecretCmd::Set { name } => {
            gatehouse::config::validate_secret_name(&name)?;
            let value = read_secret_value(&name)?;
            let k = keychain.clone();
            let n = name.clone();
            tokio::task::spawn_blocking(move || k.set(&n, &value))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            say!("secret {name} is set");
            tell_hub(client, &name).await;
            Ok(())
        }
        SecretCmd::Rm { name } => {
            let k = keychain.clone();
            let n = name.clone();
            let had = tokio::task::spawn_blocking(move || k.delete(&n))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            say!(
                "secret {name} {}",
                if had { "is removed" } else { "was not set" }
            );
            tell_hub(client, &name).await;
            Ok(())
        }
        SecretCmd::Ls { json, config } => {
            let users: BTreeMap<String, Vec<String>> = match client.request(&Request::Secrets).await
            {
                Ok(v) => v,
                Err(_) => {
                    let path = config.unwrap_or_else(config::default_config_path);
                    let cfg = Config::load(&path).map_err(|e| e.to_string())?;
                    let mut m = BTreeMap::<String, Vec<String>>::new();
                    for (id, s) in &cfg.servers {
                        for n in s.secret_refs() {
                            m.entry(n.to_owned()).or_default().push(id.to_string());
                        }
                    }
                    m
                }
            };
            let k = keychain.clone();
            let rows = tokio::task::spawn_blocking(move || {
                users
                    .into_iter()
                    .map(|(name, servers)| {
                        let set = k.is_set(&name).map_err(|e| e.to_string());
                        (name, set, servers)
                    })
                    .collect::<Vec<_>>()
            })
            .await
            .map_err(|e| e.to_string())?;
            print::secrets(&rows, json);
            Ok(())
        }
    }
}

/// The value comes from stdin (piped) or a hidden prompt (terminal); never from argv.
pub fn read_secret_value(name: &str) -> Result<String, String> {
    use std::io::{IsTerminal, Read};
    let value = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("Value for {name} (not shown): "))
            .map_err(|e| e.to_string())?
    } else {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| e.to_string())?;
        let trimmed = s.strip_suffix('\n').unwrap_or(&s);
        trimmed.strip_suffix('\r').unwrap_or(trimmed).to_owned()
    };
    if value.is_empty() {
        return Err(format!(
            "no value given for {name}: pipe it on stdin or type it at the prompt"
        ));
    }
    Ok(value)
}

async fn tell_hub(client: &ControlClient, name: &str) {
    let changed = client
        .request::<Vec<String>>(&Request::SecretChanged {
            name: name.to_owned(),
        })
        .await;
    match changed {
        Ok(ids) if !ids.is_empty() => say!("restarted: {}", ids.join(", ")),
        Ok(_) => {}
        Err(ControlError::NotRunning(_)) | Err(_) => {
            say!("(no Gatehouse hub is running; servers pick it up when they start)")
        }
    }
}
