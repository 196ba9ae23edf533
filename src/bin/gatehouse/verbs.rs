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
use gatehouse::watch::ClientFileAlert;
use gatehouse::ServerStatus;

use crate::args::{ActivityArgs, AddArgs, ApprovalsArgs, Cmd, SecretCmd, TestArgs, ToolsArgs};
use crate::ask::ask;
use crate::import;
use crate::manage;
use crate::print;
use crate::probe;

/// One line per verb: each names the function that does it.
pub async fn run(verb: Cmd, control_path: PathBuf) -> ExitCode {
    let client = ControlClient::new(control_path);
    let client = &client;
    let result = match verb {
        Cmd::Serve { .. } | Cmd::Connect { .. } => return ExitCode::from(2),
        Cmd::Import(args) => import::import(args, client).await,
        Cmd::ClientConfig(args) => import::client_config(args, client).await,
        Cmd::ClientFiles { cmd, json } => crate::client_files::run(client, cmd, json).await,
        Cmd::Approvals(args) => approvals(client, args).await,
        Cmd::Pins { json } => crate::pins::pins(client, json).await,
        Cmd::Secret { cmd } => secret(client, cmd).await,
        Cmd::Rules { cmd } => crate::rules::run(client, cmd).await,
        Cmd::Auth { cmd } => auth(client, cmd).await,
        Cmd::Clients { cmd, json } => manage::clients(client, cmd, json).await,
        Cmd::Activity(args) => activity(client, args).await,
        Cmd::Approve { id, scope, digest } => approve(client, id, scope, digest).await,
        Cmd::Deny { id, reason, digest } => deny(client, id, reason, digest).await,
        Cmd::Status { json } => status(client, json).await,
        Cmd::Start { id } => ask(client, Request::Start { id }).await.map(print::one),
        Cmd::Stop { id } => ask(client, Request::Stop { id }).await.map(print::one),
        Cmd::Restart { id: Some(id), .. } => {
            ask(client, Request::Restart { id }).await.map(print::one)
        }
        Cmd::Restart { id: None, .. } => manage::restart_all(client).await,
        Cmd::Add(args) => add(client, args).await,
        Cmd::Registry { cmd } => crate::registry::run(client, cmd).await,
        Cmd::Pin {
            id,
            update,
            yes,
            now,
            config,
        } => crate::pin::pin(client, &id, (update, yes, now), config).await,
        Cmd::Remove { id, config } => manage::remove(client, id, config).await,
        Cmd::Enable { id, config } => manage::set_enabled(client, id, true, config).await,
        Cmd::Disable { id, config } => manage::set_enabled(client, id, false, config).await,
        Cmd::Test(args) => return test(client, args).await,
        Cmd::Reload => reload(client).await,
        Cmd::Tools(args) => tools(client, args).await,
        Cmd::Logs { id, follow, lines } => logs(client, id, follow, lines).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            tell!("gatehouse: {msg}");
            ExitCode::from(1)
        }
    }
}

/// `approvals`: the waiting calls, the remembered answers (`--grants`), or `--forget`.
async fn approvals(client: &ControlClient, a: ApprovalsArgs) -> Result<(), String> {
    let json = a.json;
    if let Some(target) = a.forget {
        return ask::<Forgotten>(client, Request::Forget { target })
            .await
            .map(|f| {
                if json {
                    print::json(&f);
                } else {
                    say!("forgot {} remembered approval(s)", f.forgotten);
                }
            });
    }
    if a.grants {
        let rows = ask::<Vec<gatehouse::approval::Grant>>(client, Request::Grants).await?;
        if json {
            print::json(&rows);
            return Ok(());
        }
        print::grants(&rows);
        // The rules decide calls too: listed with the answers, each by its name in the config.
        let rules = ask::<Vec<gatehouse::hub::ListedRule>>(client, Request::Rules).await?;
        crate::rules::print_list(&rules);
        return Ok(());
    }
    crate::pins::waiting(client, json).await
}

/// `activity`: recent calls, filtered, as a table, JSON or CSV.
async fn activity(client: &ControlClient, a: ActivityArgs) -> Result<(), String> {
    let req = Request::Activity {
        limit: Some(a.limit),
        server: a.server,
        client: a.client,
    };
    let mut rows = ask::<Vec<CallRecord>>(client, req).await?;
    if let Some(group) = a.decision {
        rows.retain(|r| r.decision.group().as_str() == group);
    }
    if a.json {
        print::json(&rows);
    } else if a.csv {
        print::data(&gatehouse::activity::export::csv(&rows));
    } else {
        print::activity(&rows);
    }
    Ok(())
}

async fn approve(
    client: &ControlClient,
    id: String,
    scope: gatehouse::approval::Scope,
    digest: Option<String>,
) -> Result<(), String> {
    let change = id.starts_with("chg-");
    let req = Request::Approve {
        id,
        scope: Some(scope),
        digest,
    };
    if change {
        return crate::pins::answer(client, req, true).await;
    }
    let r = ask::<ApprovalRequest>(client, req).await?;
    say!(
        "allowed {} ({scope:?})",
        gatehouse::text::reveal(&r.exposed)
    );
    Ok(())
}

async fn deny(
    client: &ControlClient,
    id: String,
    reason: Option<String>,
    digest: Option<String>,
) -> Result<(), String> {
    if id.starts_with("chg-") {
        return crate::pins::answer(client, Request::Deny { id, reason, digest }, false).await;
    }
    let r = ask::<ApprovalRequest>(client, Request::Deny { id, reason, digest }).await?;
    say!("denied {}", gatehouse::text::reveal(&r.exposed));
    Ok(())
}

async fn status(client: &ControlClient, json: bool) -> Result<(), String> {
    let rows = ask::<Vec<ServerStatus>>(client, Request::Status).await?;
    if json {
        print::json(&rows);
    } else {
        print::status_table(&rows);
        // The clients' files changed outside Gatehouse, under the servers.
        if let Ok(alerts) = ask::<Vec<ClientFileAlert>>(client, Request::ClientFiles).await {
            crate::client_files::summary(&alerts);
        }
    }
    Ok(())
}

/// `add`: from the MCP Registry, or a command line or URL.
async fn add(client: &ControlClient, args: AddArgs) -> Result<(), String> {
    match args.registry.clone() {
        Some(spec) => crate::registry::add(client, args, &spec).await,
        None => manage::add(client, args).await,
    }
}

/// `test`: exit 0 when it ran, 1 when it did not (or is not there), 2 on bad usage.
async fn test(client: &ControlClient, args: TestArgs) -> ExitCode {
    match probe::test(client, args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(probe::TestError::Unknown(msg)) => {
            tell!("gatehouse: {msg}");
            ExitCode::from(1)
        }
        Err(probe::TestError::Usage(msg)) => {
            tell!("gatehouse: {msg}");
            ExitCode::from(2)
        }
    }
}

/// `reload`: what changed, then every server's status.
async fn reload(client: &ControlClient) -> Result<(), String> {
    let before = ask::<Vec<ServerStatus>>(client, Request::Status).await;
    let after = ask::<Vec<ServerStatus>>(client, Request::Reload).await?;
    if let Ok(before) = before {
        print::reload_changes(&before, &after);
    }
    print::status_table(&after);
    Ok(())
}

/// `tools`: the tools of every server or one (listed again first with `--refresh`), as a
/// profile sees them with `--client`.
async fn tools(client: &ControlClient, a: ToolsArgs) -> Result<(), String> {
    let (one, shown_for) = (a.id.clone(), a.client.clone());
    let req = match (a.refresh, a.id, a.client) {
        (true, Some(id), None) => Request::RefreshTools { id },
        (refresh, id, profile) => {
            if let (true, Some(id)) = (refresh, &id) {
                let again = Request::RefreshTools { id: id.clone() };
                ask::<Vec<ToolInfo>>(client, again).await?;
            }
            Request::Tools {
                id,
                client: profile,
            }
        }
    };
    let rows = ask::<Vec<ToolInfo>>(client, req).await?;
    if a.json {
        print::json(&rows);
        return Ok(());
    }
    // One server's tools: what it speaks, first.
    if let Some(id) = one {
        if let Ok(all) = ask::<Vec<ServerStatus>>(client, Request::Status).await {
            if let Some(s) = all.iter().find(|s| s.id == id) {
                print::protocol_line(s);
            }
        }
    }
    print::tools_table(&rows, shown_for.as_deref());
    Ok(())
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
                    tell!("gatehouse connect: {e}");
                    return ExitCode::from(1);
                }
            }
        }
    };
    let input = tokio::io::stdin();
    match gatehouse::connect::run(url, token, input, tokio::io::stdout()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tell!("gatehouse connect: {e}");
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
