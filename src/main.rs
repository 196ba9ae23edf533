//! `gatehouse`: the headless hub (`serve`) and the CLI verbs that talk to a running hub.
//! Exit codes: 0 ok; 1 a verb failed (unknown id, no hub running…); 2 bad usage or bad config.

mod import_cli;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use gatehouse::config::{self, Config};
use gatehouse::control::{self, ControlClient, ControlServer, Request, Response};
use gatehouse::gateway;
use gatehouse::service::{Service, ServiceError, ServiceOptions};
use gatehouse::{Hub, HubOptions};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(
    name = "gatehouse",
    version,
    about = "Your local control point for MCP servers"
)]
struct Cli {
    /// Control socket of the hub (default: $GATEHOUSE_CONTROL, else $XDG_RUNTIME_DIR/gatehouse/control.sock)
    #[arg(long, global = true, value_name = "PATH")]
    control: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the hub until SIGINT/SIGTERM, then stop every server
    Serve {
        /// Config file (default: the platform config dir's gatehouse/gatehouse.json)
        #[arg(long, value_name = "PATH")]
        config: Option<PathBuf>,
        /// Data dir for logs and state (default: the platform data dir's gatehouse/)
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Gateway address, overriding the config's gateway.listen (loopback only)
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// Serve one MCP client on stdin/stdout instead of HTTP (logs go to stderr)
        #[arg(long)]
        stdio: bool,
        /// Deny calls that need approval at once instead of waiting for an approver
        #[arg(long)]
        deny_unattended: bool,
    },
    /// List calls waiting for approval (or revoke remembered approvals with --forget)
    Approvals {
        #[arg(long)]
        json: bool,
        /// Revoke "session" and "always" approvals of SERVER or SERVER__TOOL
        #[arg(long, value_name = "SERVER[__TOOL]")]
        forget: Option<String>,
    },
    /// Allow a waiting call
    Approve {
        id: String,
        /// once (default), session (this client session, this tool) or always (this definition)
        #[arg(long, default_value = "once")]
        scope: gatehouse::approval::Scope,
    },
    /// Manage secrets in the OS keychain (values never on the command line)
    Secret {
        #[command(subcommand)]
        cmd: SecretCmd,
    },
    /// Show recent routed calls: decision, who decided, duration, outcome
    Activity {
        #[arg(long)]
        json: bool,
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[arg(long, value_name = "ID")]
        server: Option<String>,
    },
    /// Deny a waiting call; the client gets an error result with the reason
    Deny {
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Bridge a stdio-only MCP client (e.g. Claude Desktop) to the running hub
    Connect {
        /// Gateway URL (default: asked from the running hub, with its token)
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// Show every server's status
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Start a server
    Start { id: String },
    /// Stop a server
    Stop { id: String },
    /// Restart a server (also clears a `failed` state)
    Restart { id: String },
    /// Show a server's recent stderr and Gatehouse's notes about it
    Logs {
        id: String,
        /// Keep printing new lines
        #[arg(long, short)]
        follow: bool,
        /// How many recent lines to show (default: all kept, up to 1000)
        #[arg(long, short = 'n')]
        lines: Option<usize>,
    },
    /// List the tools of running servers with their exposed names
    Tools {
        id: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Re-read the config file of the running hub
    Reload,
    /// Import servers from Claude Desktop, Claude Code, Cursor, VS Code or a Gremia manifest
    Import {
        /// claude-desktop, claude-code, cursor, vscode, or a file (default: every client found)
        #[arg(long, value_name = "CLIENT|PATH")]
        from: Option<String>,
        /// The Gatehouse config to add them to (default: the platform config)
        #[arg(long, value_name = "PATH")]
        config: Option<PathBuf>,
        /// Show what would be imported; write nothing
        #[arg(long)]
        dry_run: bool,
        /// Move credential-looking env/header values (*_TOKEN, *_KEY, *_SECRET, PASSWORD…) into the keychain
        #[arg(long)]
        move_secrets: bool,
        /// Import a server under another id (repeatable)
        #[arg(long, value_name = "OLD=NEW")]
        rename: Vec<String>,
    },
    /// Print the config that connects a client to Gatehouse (or merge it into the client's file)
    ClientConfig {
        /// claude-desktop, claude-code, cursor or vscode
        target: String,
        /// Merge it into the client's file (a timestamped backup is kept)
        #[arg(long)]
        write: bool,
        /// With --write: also remove the client's entries for servers Gatehouse now runs
        #[arg(long)]
        replace_imported: bool,
        /// With --write: the client's file, if not in its usual place
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum SecretCmd {
    /// Store a value: from stdin, or typed at a hidden prompt on a terminal
    Set { name: String },
    /// Remove a value
    Rm { name: String },
    /// List the secrets the config references: set or not, and which servers use each
    Ls {
        #[arg(long)]
        json: bool,
        /// Config to read when no hub is running (default: the platform config)
        #[arg(long, value_name = "PATH")]
        config: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("gatehouse: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let control_path = cli
        .control
        .clone()
        .unwrap_or_else(control::default_socket_path);
    runtime.block_on(async move {
        match cli.cmd {
            Cmd::Serve {
                config,
                data_dir,
                listen,
                stdio,
                deny_unattended,
            } => {
                serve(
                    config,
                    data_dir,
                    listen,
                    stdio,
                    deny_unattended,
                    control_path,
                )
                .await
            }
            Cmd::Connect { url } => connect(url, control_path).await,
            verb => run_verb(verb, control_path).await,
        }
    })
}

async fn serve(
    config: Option<PathBuf>,
    data_dir: Option<PathBuf>,
    listen: Option<String>,
    stdio: bool,
    deny_unattended: bool,
    control_path: PathBuf,
) -> ExitCode {
    init_tracing();
    let config_path = config.unwrap_or_else(config::default_config_path);
    let listen = match listen.map(|a| config::parse_loopback_addr(&a)).transpose() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("gatehouse: --listen: {e}; nothing started");
            return ExitCode::from(2);
        }
    };
    let opts = ServiceOptions {
        config_path,
        data_dir: data_dir.unwrap_or_else(config::default_data_dir),
        control_path,
        listen,
        deny_unattended,
    };
    let keychain = gatehouse::secrets::KeychainStore::start();
    let result = if stdio {
        run_stdio(opts, keychain).await
    } else {
        run_hub(opts, keychain).await
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(ServeError::Config(e, path)) => {
            eprintln!("gatehouse: invalid config, nothing started\n{e}");
            let bak = config::backup_path(&path);
            if bak.exists() {
                eprintln!("  the last good copy is {}", bak.display());
            }
            ExitCode::from(2)
        }
        Err(ServeError::Other(e)) => {
            eprintln!("gatehouse: {e:#}");
            ExitCode::from(1)
        }
    }
}

enum ServeError {
    Config(config::ConfigError, PathBuf),
    Other(anyhow::Error),
}

impl From<anyhow::Error> for ServeError {
    fn from(e: anyhow::Error) -> Self {
        ServeError::Other(e)
    }
}

async fn run_hub(
    opts: ServiceOptions,
    keychain: gatehouse::secrets::KeychainStore,
) -> Result<(), ServeError> {
    let config_path = opts.config_path.clone();
    let service = match Service::start(opts, keychain).await {
        Ok(s) => s,
        Err(ServiceError::Config(e)) => return Err(ServeError::Config(e, config_path)),
        Err(e) => return Err(ServeError::Other(e.into())),
    };
    wait_for_shutdown_signal(service.hub(), None).await;
    service.stop().await;
    Ok(())
}

/// One client on stdin/stdout. The control socket is optional here: a client may start this
/// while another hub runs.
async fn run_stdio(
    service: ServiceOptions,
    keychain: gatehouse::secrets::KeychainStore,
) -> Result<(), ServeError> {
    let mut config = Config::load(&service.config_path)
        .map_err(|e| ServeError::Config(e, service.config_path.clone()))?;
    if let Some(addr) = service.listen {
        config.gateway.listen = addr;
    }
    let control_path = service.control_path;
    let data_dir = service.data_dir;
    let mut opts = HubOptions::new(data_dir.clone());
    opts.config_path = Some(service.config_path);
    opts.deny_unattended = service.deny_unattended;
    opts.secrets = std::sync::Arc::new(keychain);
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("cannot create the data dir {}", data_dir.display()))?;
    let control = match ControlServer::bind(&control_path).await {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!("no control socket for this stdio hub: {e}");
            None
        }
    };
    let hub = Hub::start(config, opts);
    let gw = gateway::Gateway::new(hub.clone());
    let shutdown = CancellationToken::new();
    let control_task = control.map(|c| tokio::spawn(c.serve(hub.clone(), None, shutdown.clone())));
    let stdio_done = CancellationToken::new();
    let stdio_task = {
        let gw = gw.clone();
        let done = stdio_done.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let input = tokio::io::BufReader::new(tokio::io::stdin());
            gateway::stdio::serve(gw, input, tokio::io::stdout(), stop).await;
            done.cancel();
        })
    };
    wait_for_shutdown_signal(&hub, Some(stdio_done)).await;
    shutdown.cancel();
    gw.shutdown().await;
    let _ = stdio_task.await;
    hub.shutdown().await;
    if let Some(t) = control_task {
        let _ = t.await;
    }
    Ok(())
}

async fn connect(url: Option<String>, control_path: PathBuf) -> ExitCode {
    init_tracing();
    let env_token = std::env::var(gateway::token::TOKEN_ENV)
        .ok()
        .filter(|t| !t.is_empty());
    let (url, token) = match (url, env_token) {
        (Some(u), Some(t)) => (u, t),
        (url, token) => {
            let info = match call(&ControlClient::new(control_path), Request::Gateway).await {
                Ok(v) => serde_json::from_value::<control::GatewayInfo>(v),
                Err(e) => {
                    eprintln!("gatehouse connect: {e}");
                    return ExitCode::from(1);
                }
            };
            match info {
                Ok(i) => (url.unwrap_or(i.url), token.unwrap_or(i.token)),
                Err(e) => {
                    eprintln!("gatehouse connect: the hub sent an unreadable answer: {e}");
                    return ExitCode::from(1);
                }
            }
        }
    };
    let input = tokio::io::BufReader::new(tokio::io::stdin());
    match gatehouse::connect::run(url, token, input, tokio::io::stdout()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gatehouse connect: {e}");
            ExitCode::from(1)
        }
    }
}

/// Waits for SIGINT/SIGTERM (SIGHUP reloads the config) or for `done` to be cancelled.
#[cfg(unix)]
async fn wait_for_shutdown_signal(hub: &gatehouse::HubHandle, done: Option<CancellationToken>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        tracing::error!("cannot install signal handlers; stopping");
        return;
    };
    let done = done.unwrap_or_default();
    loop {
        tokio::select! {
            _ = done.cancelled() => return,
            _ = term.recv() => return,
            _ = int.recv() => return,
            _ = hup.recv() => {
                // SIGHUP re-reads the config, as daemons do.
                match hub.reload().await {
                    Ok(()) => tracing::info!("config reloaded"),
                    Err(e) => tracing::error!("config not reloaded: {e}"),
                }
            }
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_shutdown_signal(_hub: &gatehouse::HubHandle, done: Option<CancellationToken>) {
    let done = done.unwrap_or_default();
    tokio::select! {
        _ = done.cancelled() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("GATEHOUSE_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    // Logs go to stderr: stdout stays free for protocol use.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

async fn run_verb(verb: Cmd, control_path: PathBuf) -> ExitCode {
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
            let args = import_cli::ImportArgs {
                from,
                config,
                dry_run,
                move_secrets,
                renames: rename,
            };
            import_cli::import(args, &client).await
        }
        Cmd::ClientConfig {
            target,
            write,
            replace_imported,
            file,
        } => {
            let args = import_cli::ClientConfigArgs {
                target,
                write,
                replace_imported,
                file,
            };
            import_cli::client_config(args, &client).await
        }
        Cmd::Approvals {
            json,
            forget: Some(target),
        } => call(&client, Request::Forget { target }).await.map(|v| {
            if json {
                print_json(&v);
            } else {
                println!(
                    "forgot {} remembered approval(s)",
                    v.get("forgotten").and_then(Value::as_u64).unwrap_or(0)
                );
            }
        }),
        Cmd::Approvals { json, forget: None } => call(&client, Request::Approvals).await.map(|v| {
            if json {
                print_json(&v);
            } else {
                print_approvals(&v);
            }
        }),
        Cmd::Secret { cmd } => secret(&client, cmd).await,
        Cmd::Activity {
            json,
            limit,
            server,
        } => call(
            &client,
            Request::Activity {
                limit: Some(limit),
                server,
            },
        )
        .await
        .map(|v| {
            if json {
                print_json(&v);
            } else {
                print_activity(&v);
            }
        }),
        Cmd::Approve { id, scope } => call(
            &client,
            Request::Approve {
                id,
                scope: Some(scope),
            },
        )
        .await
        .map(|v| {
            println!(
                "allowed {} ({scope:?})",
                v.get("exposed").and_then(Value::as_str).unwrap_or("?")
            )
        }),
        Cmd::Deny { id, reason } => call(&client, Request::Deny { id, reason }).await.map(|v| {
            println!(
                "denied {}",
                v.get("exposed").and_then(Value::as_str).unwrap_or("?")
            )
        }),
        Cmd::Status { json } => call(&client, Request::Status).await.map(|v| {
            if json {
                print_json(&v);
            } else {
                print_status_table(&v);
            }
        }),
        Cmd::Start { id } => call(&client, Request::Start { id }).await.map(print_one),
        Cmd::Stop { id } => call(&client, Request::Stop { id }).await.map(print_one),
        Cmd::Restart { id } => call(&client, Request::Restart { id }).await.map(print_one),
        Cmd::Reload => call(&client, Request::Reload)
            .await
            .map(|v| print_status_table(&v)),
        Cmd::Tools { id, json } => call(&client, Request::Tools { id }).await.map(|v| {
            if json {
                print_json(&v);
            } else {
                print_tools_table(&v);
            }
        }),
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
            println!("secret {name} is set");
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
            println!(
                "secret {name} {}",
                if had { "is removed" } else { "was not set" }
            );
            tell_hub(client, &name).await;
            Ok(())
        }
        SecretCmd::Ls { json, config } => {
            let users: std::collections::BTreeMap<String, Vec<String>> =
                match call(client, Request::Secrets).await {
                    Ok(v) => serde_json::from_value(v).map_err(|e| e.to_string())?,
                    Err(_) => {
                        let path = config.unwrap_or_else(config::default_config_path);
                        let cfg = Config::load(&path).map_err(|e| e.to_string())?;
                        let mut m = std::collections::BTreeMap::<String, Vec<String>>::new();
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
            if json {
                let v: Vec<Value> = rows
                    .iter()
                    .map(|(n, set, servers)| match set {
                        Ok(s) => serde_json::json!({"name": n, "set": s, "servers": servers}),
                        Err(e) => serde_json::json!({"name": n, "set": null, "error": e, "servers": servers}),
                    })
                    .collect();
                print_json(&Value::Array(v));
            } else if rows.is_empty() {
                println!("The config references no secrets. Use {{\"secret\": \"NAME\"}} in a server's env or headers.");
            } else {
                println!("{:<32} {:<8} USED BY", "NAME", "SET");
                for (n, set, servers) in rows {
                    let set = match set {
                        Ok(true) => "yes".to_owned(),
                        Ok(false) => "no".to_owned(),
                        Err(e) => format!("? ({e})"),
                    };
                    println!("{n:<32} {set:<8} {}", servers.join(", "));
                }
            }
            Ok(())
        }
    }
}

/// The value comes from stdin (piped) or a hidden prompt (terminal); never from argv.
fn read_secret_value(name: &str) -> Result<String, String> {
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
    match call(
        client,
        Request::SecretChanged {
            name: name.to_owned(),
        },
    )
    .await
    {
        Ok(v) => {
            let ids: Vec<&str> = v
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if !ids.is_empty() {
                println!("restarted: {}", ids.join(", "));
            }
        }
        Err(_) => println!("(no Gatehouse hub is running; servers pick it up when they start)"),
    }
}

async fn call(client: &ControlClient, req: Request) -> Result<Value, String> {
    let resp: Response = client.call(&req).await.map_err(|e| e.to_string())?;
    if resp.ok {
        Ok(resp.result.unwrap_or(Value::Null))
    } else {
        Err(resp
            .error
            .unwrap_or_else(|| "the hub refused the request".into()))
    }
}

async fn logs(
    client: &ControlClient,
    id: String,
    follow: bool,
    lines: Option<usize>,
) -> Result<(), String> {
    let mut first = true;
    let mut err = None;
    client
        .stream(&Request::Logs { id, follow, lines }, |v| {
            if first {
                first = false;
                let resp: Response = match serde_json::from_value(v) {
                    Ok(r) => r,
                    Err(e) => {
                        err = Some(e.to_string());
                        return false;
                    }
                };
                if !resp.ok {
                    err = resp.error;
                    return false;
                }
                for l in resp
                    .result
                    .as_ref()
                    .and_then(|r| r.as_array())
                    .into_iter()
                    .flatten()
                {
                    print_log_line(l);
                }
                return follow;
            }
            print_log_line(&v);
            true
        })
        .await
        .map_err(|e| e.to_string())?;
    match err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn print_log_line(v: &Value) {
    let stream = v.get("stream").and_then(Value::as_str).unwrap_or("");
    let line = v.get("line").and_then(Value::as_str).unwrap_or("");
    if stream == "gatehouse" {
        println!("[gatehouse] {line}");
    } else {
        println!("{line}");
    }
}

fn print_json(v: &Value) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

fn print_one(v: Value) {
    let id = v.get("id").and_then(Value::as_str).unwrap_or("?");
    let state = v.get("state").and_then(Value::as_str).unwrap_or("?");
    match v.get("last_error").and_then(Value::as_str) {
        Some(e) if state == "failed" => println!("{id}: {state} — {e}"),
        _ => println!("{id}: {state}"),
    }
}

fn print_status_table(v: &Value) {
    let rows = v.as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        println!("No servers configured. Add one to the config file and run `gatehouse reload`.");
        return;
    }
    let now = gatehouse::logs::now_ms();
    println!(
        "{:<20} {:<11} {:>8} {:>9} {:>8} {:>6}  LAST ERROR",
        "ID", "STATE", "PID", "UPTIME", "RESTARTS", "TOOLS"
    );
    for r in rows {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let n = |k: &str| r.get(k).and_then(Value::as_u64);
        let state = s("state");
        let uptime = if state == "running" {
            n("since_ms")
                .map(|t| human_secs(now.saturating_sub(t) / 1000))
                .unwrap_or_default()
        } else {
            String::new()
        };
        println!(
            "{:<20} {:<11} {:>8} {:>9} {:>8} {:>6}  {}",
            s("id"),
            state,
            n("pid")
                .map(|p| p.to_string())
                .unwrap_or_else(|| "-".into()),
            uptime,
            n("restarts").unwrap_or(0),
            n("tools").unwrap_or(0),
            s("last_error"),
        );
    }
}

fn print_activity(v: &Value) {
    let rows = v.as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        println!("No calls yet.");
        return;
    }
    println!(
        "{:<10} {:<32} {:<20} {:<8} {:>8} OUTCOME",
        "AGO", "TOOL", "DECISION", "BY", "MS"
    );
    let now = gatehouse::logs::now_ms();
    for r in rows {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let ago = human_secs(
            now.saturating_sub(r.get("time_ms").and_then(Value::as_u64).unwrap_or(now)) / 1000,
        );
        println!(
            "{:<10} {:<32} {:<20} {:<8} {:>8} {}",
            ago,
            format!("{}__{}", s("server"), s("tool")),
            s("decision"),
            s("decided_by"),
            r.get("duration_ms").and_then(Value::as_u64).unwrap_or(0),
            s("outcome")
        );
    }
}

fn print_approvals(v: &Value) {
    let rows = v.as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        println!("No calls are waiting for approval.");
        return;
    }
    let now = gatehouse::logs::now_ms();
    for r in rows {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let client = r
            .pointer("/client/name")
            .and_then(Value::as_str)
            .unwrap_or("unknown client");
        let left = r
            .get("expires_at")
            .and_then(Value::as_u64)
            .map_or(0, |e| e.saturating_sub(now) / 1000);
        println!(
            "{}  {}  from {client}  ({left} s left)",
            s("id"),
            s("exposed")
        );
        if let Some(c) = r.get("changed").filter(|c| !c.is_null()) {
            let fields: Vec<&str> = c
                .get("fields")
                .and_then(Value::as_array)
                .map(|f| f.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            println!(
                "    the tool's definition changed since it was trusted: {}",
                fields.join(", ")
            );
        }
        let args = r
            .get("arguments")
            .map(|a| serde_json::to_string_pretty(a).unwrap_or_default())
            .unwrap_or_default();
        for line in args.lines() {
            println!("    {line}");
        }
        println!("    gatehouse approve {} [--scope once|session|always]   |   gatehouse deny {} [--reason TEXT]", s("id"), s("id"));
    }
}

fn human_secs(s: u64) -> String {
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{}s", s / 60, s % 60),
        _ => format!("{}h{}m", s / 3600, (s % 3600) / 60),
    }
}

fn print_tools_table(v: &Value) {
    let rows = v.as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        println!("No tools: no server is running yet (see `gatehouse status`).");
        return;
    }
    for r in rows {
        let name = r.get("name").and_then(Value::as_str).unwrap_or("");
        let title = r.get("title").and_then(Value::as_str).unwrap_or("");
        let hints: Vec<&str> = r
            .get("annotations")
            .and_then(Value::as_object)
            .map(|a| {
                [
                    ("readOnlyHint", "read-only"),
                    ("destructiveHint", "destructive"),
                    ("idempotentHint", "idempotent"),
                    ("openWorldHint", "open-world"),
                ]
                .iter()
                .filter(|(k, _)| a.get(*k) == Some(&Value::Bool(true)))
                .map(|(_, label)| *label)
                .collect()
            })
            .unwrap_or_default();
        println!("{name:<48} {title:<30} {}", hints.join(","));
    }
}
