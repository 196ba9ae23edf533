//! `gatehouse import` and `gatehouse client-config`: the CLI side (files, keychain, printing) of
//! `gatehouse::import` and `gatehouse::clients`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use gatehouse::clients::{self, ClientKind};
use gatehouse::config::{self, Config};
use gatehouse::control::{ControlClient, GatewayInfo, Request};
use gatehouse::hub::ToolInfo;
use gatehouse::import::{self, Candidate, Outcome};
use gatehouse::{ServerStatus, State};

use crate::args::{ClientConfigArgs, ImportArgs};

/// A client's files: its user file and, where it has one, the project file of the current
/// directory — (label, path, scope) for each that exists.
fn files_of(kind: ClientKind) -> Vec<(String, PathBuf, String)> {
    let mut out: Vec<(String, PathBuf, String)> = kind
        .config_path()
        .filter(|p| p.exists())
        .map(|p| (kind.label().to_owned(), p, kind.user_scope().to_owned()))
        .into_iter()
        .collect();
    let cwd = std::env::current_dir().ok();
    if let Some(p) = cwd
        .clone()
        .and_then(|d| kind.project_path(&d).filter(|p| p.exists()).map(|p| (d, p)))
    {
        out.push((
            kind.label().to_owned(),
            p.1,
            format!("{} {}", kind.project_scope(), p.0.display()),
        ));
    }
    // Files it read before its current format (VS Code's `servers` files): read too.
    for p in kind
        .older_paths(cwd.as_deref())
        .into_iter()
        .filter(|p| p.exists())
    {
        let scope = match cwd.as_deref().filter(|d| p.starts_with(d)) {
            Some(d) => format!("{} {} (older format)", kind.project_scope(), d.display()),
            None => format!("{} (older format)", kind.user_scope()),
        };
        out.push((kind.label().to_owned(), p, scope));
    }
    out
}

/// Where to read from: one client, one file, or every client file found on this machine (and
/// the current directory's project files).
fn sources(from: Option<&str>) -> Result<Vec<(String, PathBuf, String)>, String> {
    match from {
        Some(f) => match ClientKind::parse(f) {
            Ok(kind) => {
                let found = files_of(kind);
                if found.is_empty() {
                    let path = kind.config_path().ok_or_else(|| {
                        format!("no home directory to find {}'s config", kind.label())
                    })?;
                    return Err(format!(
                        "{} has no config at {} on this machine; pass the file with --from PATH",
                        kind.label(),
                        path.display()
                    ));
                }
                Ok(found)
            }
            Err(_) => {
                let path = PathBuf::from(f);
                if !path.exists() {
                    return Err(format!(
                        "--from {f}: no such file, and not one of {}",
                        ClientKind::ALL.map(|k| k.id()).join(", ")
                    ));
                }
                Ok(vec![("file".to_owned(), path, String::new())])
            }
        },
        None => {
            let found: Vec<_> = ClientKind::ALL.into_iter().flat_map(files_of).collect();
            if found.is_empty() {
                return Err(format!(
                    "no client config found ({}); pass --from PATH",
                    ClientKind::ALL
                        .into_iter()
                        .filter_map(|k| k.config_path())
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            Ok(found)
        }
    }
}

pub async fn import(args: ImportArgs, control: &ControlClient) -> Result<(), String> {
    let mut renames = BTreeMap::new();
    for r in &args.renames {
        let (old, new) = r
            .split_once('=')
            .ok_or_else(|| format!("--rename {r}: use OLD=NEW"))?;
        renames.insert(old.to_owned(), new.to_owned());
    }
    // Read every source first: a broken file stops the import before anything is written.
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut client_of: BTreeMap<PathBuf, String> = BTreeMap::new();
    for (label, path, scope) in sources(args.from.as_deref())? {
        let mut found = import::read_source(&path)?;
        // The files first, then each server on a line naming its client, scope and file.
        say!("{label}: {} server(s) in {}", found.len(), path.display());
        for c in found.iter_mut() {
            if c.scope.is_empty() {
                c.scope = scope.clone();
            }
            client_of.insert(c.file.clone(), label.clone());
        }
        candidates.extend(found);
    }
    let config_path = args.config.unwrap_or_else(config::default_config_path);
    let current = if config_path.exists() {
        Config::load(&config_path).map_err(|e| e.to_string())?
    } else {
        Config::default()
    };
    // The running hub's actual port too: its own entry in a client's file is never offered.
    let running = control
        .request::<GatewayInfo>(&Request::Gateway { client: None })
        .await
        .ok()
        .and_then(|i| reqwest_port(&i.url));
    let plan = import::plan(&current, candidates, &renames, running.as_slice());
    let interactive = !args.dry_run && std::io::IsTerminal::is_terminal(&std::io::stdin());
    let chosen = review(plan, (&client_of, &args.include), &current, interactive);
    let keychain =
        (args.move_secrets && !args.dry_run).then(gatehouse::secrets::KeychainStore::start);
    let mut prepared =
        tokio::task::spawn_blocking(move || import::prepare(chosen, keychain.as_ref()))
            .await
            .map_err(|e| e.to_string())??;
    // Pinned as every way of adding pins (a dry run does not ask the index).
    if !args.dry_run {
        for line in import::pin_all(&mut prepared, current.registry.min_age_days()).await {
            say!("  {line}");
        }
    }
    report_credentials(&prepared, args.move_secrets, args.dry_run);
    // Checked now so a dry run reports what the real run would refuse.
    import::apply(&current, &prepared)?;
    let added: Vec<String> = prepared.iter().map(|p| p.id.clone()).collect();
    let checks: Vec<(String, Vec<String>)> = prepared
        .iter()
        .filter(|p| !p.tools_used.is_empty())
        .map(|p| (p.id.clone(), p.tools_used.clone()))
        .collect();
    if added.is_empty() {
        say!("nothing to import");
        return Ok(());
    }
    if args.dry_run {
        say!(
            "dry run: would add {} to {}",
            added.join(", "),
            config_path.display()
        );
        return Ok(());
    }
    write(&config_path, prepared).await?;
    say!("added {} to {}", added.join(", "), config_path.display());
    // A running hub on this config picks the change up at once.
    match control.request::<Vec<ServerStatus>>(&Request::Reload).await {
        Ok(_) => {
            say!("the running hub reloaded its config");
            check_tools_used(control, &checks).await;
        }
        _ => {
            if !checks.is_empty() {
                say!("start Gatehouse to check the tools these servers are expected to have");
            }
        }
    }
    Ok(())
}

/// Each server found, on a line naming its client, scope and file; an id already taken is asked
/// again on a terminal, else skipped with why; a project server its client has not approved is
/// left out unless `include` names it. What is left is imported.
fn review(
    plan: Vec<(Candidate, Outcome)>,
    (client_of, include): (&BTreeMap<PathBuf, String>, &[String]),
    current: &Config,
    interactive: bool,
) -> Vec<Candidate> {
    let mut chosen: Vec<Candidate> = Vec::new();
    for (mut c, outcome) in plan {
        let client = client_of.get(&c.file).map_or("file", String::as_str);
        let scope = match c.scope.as_str() {
            "" => String::new(),
            s => format!(", {s} scope"),
        };
        say!(
            "{} ← \"{}\" ({client}{scope}, {}): {}",
            c.id,
            c.source_name,
            c.file.display(),
            c.command_line()
        );
        if c.oauth_candidate() {
            say!(
                "  remote, no credentials in the file: if it asks for a sign-in (OAuth), it waits as needs_sign_in; run `gatehouse auth login {}`",
                c.id
            );
        }
        // A project server its client never approved: listed, imported only when picked.
        if let Some(why) = &c.unapproved {
            if !include.contains(&c.source_name) && !include.contains(&c.id) {
                say!(
                    "  {why}: not imported (its client never ran it); pass --include {} to import it",
                    c.source_name
                );
                continue;
            }
            say!("  {why}: imported because --include names it");
        }
        if let Outcome::Skip(why) = outcome {
            // On a terminal, ask for another id instead of skipping.
            match interactive
                .then(|| ask_new_id(&c.id, &why, current, &chosen))
                .flatten()
            {
                Some(id) => {
                    say!("  importing as {id}");
                    c.id = id;
                }
                None => {
                    say!("  skipped: {why}");
                    continue;
                }
            }
        }
        chosen.push(c);
    }
    chosen
}

/// What became of each credential-looking value: moved to the keychain, or left in plain text
/// and why.
fn report_credentials(prepared: &[import::Prepared], move_secrets: bool, dry_run: bool) {
    for p in prepared {
        for (var, name) in &p.moved {
            say!(
                "  {}: {var}: moved to the keychain as secret \"{name}\"",
                p.id
            );
        }
        for var in &p.plaintext {
            if move_secrets && dry_run {
                say!("  {}: {var}: would be moved to the keychain", p.id);
            } else if move_secrets {
                say!(
                    "  warning: {}: {var} is shorter than {} characters, too short to keep out of logs, so it stays in plain text in the config",
                    p.id,
                    gatehouse::secrets::MIN_SECRET_LEN
                );
            } else {
                say!(
                    "  warning: {}: {var} looks like a credential and stays in plain text in the config; run again with --move-secrets to keep it in the keychain",
                    p.id
                );
            }
        }
    }
}

/// Under the config's edit lock: the file as it is now (another import or the app may have
/// changed it since it was read), a backup, the new servers, an atomic save.
async fn write(
    config_path: &std::path::Path,
    prepared: Vec<import::Prepared>,
) -> Result<(), String> {
    let backup = std::sync::Arc::new(std::sync::Mutex::new(None));
    let edited = {
        let (path, backup) = (config_path.to_path_buf(), backup.clone());
        tokio::task::spawn_blocking(move || {
            config::edit(&path, |current| {
                let bak = gatehouse::client_file::backup::backup(&path)
                    .map_err(|e| format!("cannot back up {}: {e}", path.display()))?;
                *gatehouse::sync::lock(&backup) = bak;
                import::apply(current, &prepared)
            })
        })
        .await
        .map_err(|e| e.to_string())?
    };
    edited.map_err(|e| e.to_string())?;
    if let Some(bak) = gatehouse::sync::lock(&backup).take() {
        say!("backup: {}", bak.display());
    }
    Ok(())
}

/// Asks on the terminal for an id to use instead of a taken or invalid one; empty skips.
fn ask_new_id(id: &str, why: &str, config: &Config, chosen: &[Candidate]) -> Option<String> {
    say!("  {why}");
    loop {
        crate::print::out(&format!("  new id for \"{id}\" (empty to skip): "));
        let mut line = String::new();
        if std::io::stdin().read_line(&mut line).ok()? == 0 {
            return None;
        }
        let new = line.trim();
        if new.is_empty() {
            return None;
        }
        match gatehouse::config::ServerId::parse(new) {
            Err(e) => say!("  {e}"),
            Ok(sid) if config.servers.contains_key(&sid) || chosen.iter().any(|c| c.id == new) => {
                say!("  \"{new}\" is taken too")
            }
            Ok(_) => return Some(new.to_owned()),
        }
    }
}

/// Gremia's `tools_used` against what each imported server really lists once running.
async fn check_tools_used(control: &ControlClient, checks: &[(String, Vec<String>)]) {
    for (id, wanted) in checks {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let tools: Option<Vec<String>> = loop {
            let state = control
                .request::<Vec<ServerStatus>>(&Request::Status)
                .await
                .ok()
                .and_then(|all| all.into_iter().find(|s| s.id == *id))
                .map(|s| s.state);
            match state {
                // Running, or idle (on demand) with its tools learned.
                Some(State::Running | State::Idle) => {
                    break control
                        .request::<Vec<ToolInfo>>(&Request::Tools {
                            id: Some(id.clone()),
                            client: None,
                        })
                        .await
                        .ok()
                        .map(|t| t.into_iter().map(|t| t.tool).collect());
                }
                Some(State::Failed) | None => break None,
                _ if std::time::Instant::now() > deadline => break None,
                _ => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
            }
        };
        match tools {
            Some(have) => {
                let missing: Vec<&String> = wanted.iter().filter(|t| !have.contains(t)).collect();
                if missing.is_empty() {
                    say!(
                        "{id}: all {} tools the manifest uses are there",
                        wanted.len()
                    );
                } else {
                    say!(
                        "{id}: missing tool(s) the manifest uses: {} (the server lists {})",
                        missing
                            .iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        have.join(", ")
                    );
                }
            }
            None => {
                say!("{id}: not running, so its tools could not be checked; see `gatehouse status`")
            }
        }
    }
}

/// Prints (or merges into the client's file) the entry connecting a client to Gatehouse.
/// Written by the running hub, which watches the clients' files and so knows the write is its
/// own; without one (a stdio client's entry), here — the next start of Gatehouse then reports
/// it as a change, to keep or put back.
async fn write_through_hub(
    control: &ControlClient,
    path: &std::path::Path,
    kind: ClientKind,
    entry: &serde_json::Value,
    managed: &[String],
) -> Result<clients::Written, String> {
    if let Some(refused) = clients::managed_refusal(kind, entry) {
        return Err(refused);
    }
    let asked = control
        .request::<clients::Written>(&Request::WriteClientEntry {
            path: path.to_owned(),
            client: kind.id().to_owned(),
            entry: entry.clone(),
            managed: managed.to_vec(),
        })
        .await;
    match asked {
        Ok(w) => Ok(w),
        Err(gatehouse::control::ControlError::NotRunning(_)) => {
            clients::write_entry(path, kind, entry, managed)
        }
        Err(e) => Err(e.to_string()),
    }
}

pub async fn client_config(
    mut args: ClientConfigArgs,
    control: &ControlClient,
) -> Result<(), String> {
    let kind = ClientKind::parse(&args.target)?;
    // Written into a client's file, the entry gets a profile of that client's own (made when
    // missing), so what the person allows "always" for it covers it alone; `--client ID` names
    // another (shared) one, `--client default` the gateway token.
    if args.write && args.client.is_none() {
        own_profile(kind, control).await?;
        args.client = Some(kind.id().to_owned());
    }
    if args.client.as_deref() == Some(gatehouse::profiles::DEFAULT_PROFILE) {
        args.client = None;
    }
    let (url, token) = if kind.speaks_http() {
        let info: GatewayInfo = control
            .request(&Request::Gateway {
                client: args.client.clone(),
            })
            .await
            .map_err(|e| format!("{e}\n(the snippet needs the running hub's URL and token)"))?;
        (info.url, info.token)
    } else {
        (String::new(), String::new())
    };
    let bin = clients::gatehouse_bin();
    if !args.write {
        let mut snippet = clients::snippet(kind, &url, &token, &bin);
        if let Some(e) = snippet
            .get_mut(kind.servers_key())
            .and_then(|s| s.get_mut(clients::ENTRY_NAME))
        {
            *e = clients::for_control(
                clients::for_profile(e.take(), args.client.as_deref()),
                control.path(),
            );
        }
        say!("{}", kind.render(&snippet));
        let place = kind
            .config_path()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "its config file".into());
        tell!(
            "Merge this into {place} under \"{}\" (or run `gatehouse client-config {} --write`).",
            kind.servers_key(),
            kind.id()
        );
        if let Some(reads) = kind.reads() {
            tell!("{reads}.");
        }
        if kind.speaks_http() {
            tell!("It holds the gateway token: keep the file private.");
        } else {
            tell!("{} starts `gatehouse connect`, which asks the running Gatehouse for its URL and token.", kind.label());
        }
        return Ok(());
    }
    let path = args
        .file
        .or_else(|| kind.config_path())
        .ok_or_else(|| "no home directory: pass the client's file with --file".to_owned())?;
    let managed: Vec<String> = if args.replace_imported {
        Config::load(&config::default_config_path())
            .map(|c| c.servers.keys().map(|k| k.to_string()).collect())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let entry = clients::for_control(
        clients::for_profile(
            clients::entry(kind, &url, &token, &bin),
            args.client.as_deref(),
        ),
        control.path(),
    );
    let path = std::path::absolute(&path).unwrap_or(path);
    let written = write_through_hub(control, &path, kind, &entry, &managed).await?;
    if let Some(line) = written.backup_line() {
        tell!("{line}");
    }
    for r in &written.removed {
        tell!("removed \"{r}\" (Gatehouse runs it now)");
    }
    tell!(
        "wrote the \"{}\" entry into {}",
        clients::ENTRY_NAME,
        path.display()
    );
    if kind.speaks_http() {
        tell!(
            "{} holds the gateway token, so it is readable by you only (mode 0600).",
            path.display()
        );
    }
    Ok(())
}

/// Makes client profile `kind.id()` (every server, the default policy) unless it exists: through
/// the running hub, or — for a client that starts the bridge, when no hub runs — in the config
/// file, where the hub makes its token when it starts. An existing profile is left as it is.
async fn own_profile(kind: ClientKind, control: &ControlClient) -> Result<(), String> {
    use gatehouse::control::ClientInfo;
    let id = kind.id();
    let said = |made: bool| {
        let what = if made {
            "a client profile of its own"
        } else {
            "its own client profile"
        };
        tell!(
            "{} gets {what}, \"{id}\": what you allow \"always\" for {} covers {} only (pass --client default to share the gateway token instead).",
            kind.label(),
            kind.label(),
            kind.label()
        );
    };
    match control.request::<Vec<ClientInfo>>(&Request::Clients).await {
        Ok(rows) if rows.iter().any(|r| r.id == id) => {
            said(false);
            Ok(())
        }
        Ok(_) => {
            control
                .request::<Vec<ClientInfo>>(&Request::SaveClient {
                    id: id.to_owned(),
                    servers: None,
                })
                .await
                .map_err(|e| e.to_string())?;
            said(true);
            Ok(())
        }
        Err(_) if !kind.speaks_http() => {
            let path = config::default_config_path();
            let mut made = false;
            config::edit(&path, |c| {
                if c.clients.keys().any(|k| k.as_str() == id) {
                    return Ok(c.clone());
                }
                made = true;
                c.with_client(id, gatehouse::config::ClientProfile::default())
            })
            .map_err(|e| e.to_string())?;
            said(made);
            Ok(())
        }
        Err(e) => Err(format!(
            "{e}\n(the entry needs the running hub, which makes {}'s client profile and its token)",
            kind.label()
        )),
    }
}

fn reqwest_port(url: &str) -> Option<u16> {
    url.rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next())
        .and_then(|p| p.parse().ok())
}
