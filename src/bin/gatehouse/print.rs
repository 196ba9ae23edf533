//! How the CLI shows the hub's answers to people (tables, lines) or scripts (`--json`).

use gatehouse::activity::CallRecord;
use gatehouse::hub::ToolInfo;
use gatehouse::logs::{LogLine, LogStream};
use gatehouse::{ServerStatus, State};
use serde::Serialize;

/// Writes `text` for a person on stdout, through the one terminal-safe printer: every character
/// a terminal would act on or a person cannot see (ESC and every other control, C1, bidi
/// overrides, zero-width characters…) is shown as `⟨U+XXXX⟩`, line feeds and tabs kept — so a
/// server's, a client's or a registry's words cannot move the cursor, write the clipboard (OSC
/// 52), hide text or spoof a line, whichever verb prints them. A reader that went away
/// (`gatehouse logs -f | head`) ends the command quietly, as a closed pipe ends other tools
/// (`println!` would panic); another write error ends it with a message.
pub fn out(text: &str) {
    write_raw(
        &mut std::io::stdout().lock(),
        &gatehouse::text::reveal_lines(text),
    );
}

/// Writes `text` for a person on stderr (warnings, errors), as safely as [`out`].
pub fn err(text: &str) {
    write_raw(
        &mut std::io::stderr().lock(),
        &gatehouse::text::reveal_lines(text),
    );
}

fn write_raw(w: &mut impl std::io::Write, text: &str) {
    if let Err(e) = w.write_all(text.as_bytes()).and_then(|()| w.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("gatehouse: cannot write the output: {e}\n").as_bytes(),
        );
        std::process::exit(1);
    }
}

/// Text in a format for programs (CSV), as it is: its own grammar escapes what it holds.
pub fn data(text: &str) {
    write_raw(&mut std::io::stdout().lock(), text);
}

/// `v` as JSON for scripts: text unchanged (JSON escapes every control character itself).
pub fn json(v: &impl Serialize) {
    write_raw(
        &mut std::io::stdout().lock(),
        &format!("{}\n", serde_json::to_string_pretty(v).unwrap_or_default()),
    );
}

pub fn log_line(l: &LogLine) {
    match l.stream {
        LogStream::Gatehouse => out(&format!("[gatehouse] {}\n", l.line)),
        LogStream::Stderr => out(&format!("{}\n", l.line)),
    }
}

pub fn one(s: ServerStatus) {
    match s.last_error {
        Some(e) if matches!(s.state, State::Failed | State::NeedsSignIn) => {
            say!("{}: {} — {e}", s.id, s.state)
        }
        _ => say!("{}: {}", s.id, s.state),
    }
}

pub fn status_table(rows: &[ServerStatus]) {
    if rows.is_empty() {
        say!("No servers configured. Add one with `gatehouse add ID -- COMMAND` (or `--url URL`).");
        return;
    }
    let now = gatehouse::logs::now_ms();
    let head = format!(
        "{:<20} {:<13} {:<7} {:>8} {:>9} {:>8} {:>6}  {:<17}  ",
        "ID", "STATE", "ENABLED", "PID", "UPTIME", "RESTARTS", "TOOLS", "PROTOCOL"
    );
    // The command fills what is left of the terminal's width.
    let room = terminal_width()
        .saturating_sub(head.chars().count())
        .max(20);
    say!("{head}COMMAND");
    for r in rows {
        let uptime = if r.state == State::Running {
            human_secs(now.saturating_sub(r.since_ms) / 1000)
        } else {
            String::new()
        };
        // An id and a name as the config file has them (an entry that cannot be read may have
        // any key): hidden characters as code points.
        let shown = gatehouse::text::reveal(&r.id);
        let id = match &r.name {
            Some(n) => format!("{shown} ({})", gatehouse::text::reveal(n)),
            None => shown.into_owned(),
        };
        // The version and era it spoke at its last handshake.
        let protocol = match (&r.protocol_version, r.era) {
            (Some(v), Some(e)) => format!("{v} {}", e.as_str()),
            (Some(v), None) => v.clone(),
            _ => "-".into(),
        };
        say!(
            "{:<20} {:<13} {:<7} {:>8} {:>9} {:>8} {:>6}  {:<17}  {}",
            id,
            r.state.as_str(),
            if r.enabled { "yes" } else { "no" },
            r.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
            uptime,
            r.restarts,
            r.tools,
            truncate(&protocol, 17),
            truncate(&r.command, room),
        );
        if let Some(e) = &r.last_error {
            say!("    last error: {e}");
        }
        for w in &r.warnings {
            say!("    warning: {w}");
        }
        // A local server is never silently unconfined.
        if let Some(s) = r.sandbox.as_ref().filter(|s| !s.confined) {
            say!("    sandbox: {}", s.mechanism);
        }
        for l in r.sandbox.iter().flat_map(|s| &s.left_out_why) {
            say!("    sandbox: {}", l.line());
        }
        // What a fenced server tried to reach and was refused, the latest first.
        for d in r
            .sandbox
            .iter()
            .flat_map(|s| s.network.iter().flat_map(|n| &n.refused))
        {
            let host = gatehouse::text::reveal(&d.host);
            say!(
                "    sandbox refused {host}:{} ({}×): {}",
                d.port,
                d.count,
                d.why
            );
        }
    }
}

/// What a reload changed, by server: added, removed, and what differs of the rest (what it runs,
/// enabled, name, relaunched). Tool flags that change nothing visible are not listed.
pub fn reload_changes(before: &[ServerStatus], after: &[ServerStatus]) {
    let find = |rows: &[ServerStatus], id: &str| rows.iter().find(|s| s.id == id).cloned();
    let mut lines = Vec::new();
    for a in after {
        // An entry that cannot be read is said with its problem and fix; the rest applied.
        if a.state == State::Invalid {
            let was = find(before, &a.id);
            if was.as_ref().map(|b| (b.state, &b.last_error)) != Some((a.state, &a.last_error)) {
                lines.push(format!(
                    "not applied {}: {}",
                    a.id,
                    a.last_error
                        .as_deref()
                        .unwrap_or("its entry cannot be read")
                ));
            }
            continue;
        }
        match find(before, &a.id).filter(|b| b.state != State::Invalid) {
            None => lines.push(format!("added {}", a.id)),
            Some(b) => {
                let mut what = Vec::new();
                if b.command != a.command {
                    what.push(format!("now runs {}", a.command));
                }
                if b.enabled != a.enabled {
                    what.push(if a.enabled {
                        "enabled".into()
                    } else {
                        "disabled".into()
                    });
                }
                if b.name != a.name {
                    what.push("display name".into());
                }
                if what.is_empty() && b.pid.is_some() && b.pid != a.pid {
                    what.push("restarted".into());
                }
                if !what.is_empty() {
                    lines.push(format!("changed {}: {}", a.id, what.join(", ")));
                }
            }
        }
    }
    for b in before {
        if find(after, &b.id).is_none() {
            lines.push(format!("removed {}", b.id));
        }
    }
    if lines.is_empty() {
        say!("reloaded: no server was added, removed or changed in what it runs");
    } else {
        for l in lines {
            say!("reloaded: {l}");
        }
    }
}

/// The terminal's width (`COLUMNS`), 120 when unknown.
fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|w: &usize| *w >= 40)
        .unwrap_or(120)
}

/// `text` cut to `max` characters, with an ellipsis when cut.
fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A probe's report (`gatehouse test`).
pub fn probe(r: &gatehouse::probe::ProbeReport) {
    if r.ok {
        say!(
            "{}: ready in {} ms (protocol {}, {})",
            r.id,
            r.elapsed_ms,
            r.protocol_version.as_deref().unwrap_or("?"),
            r.era.map_or("era unknown", |e| e.as_str())
        );
    } else {
        say!(
            "{}: not ready after {} ms: {}",
            r.id,
            r.elapsed_ms,
            r.error.as_deref().unwrap_or("unknown error")
        );
    }
    say!("  runs: {}", r.command);
    if let Some(p) = &r.package {
        say!("  package: {p}");
    }
    if let Some(s) = &r.sandbox {
        say!("  sandbox: {} ({})", s.summary, s.mechanism);
        for l in &s.left_out_why {
            say!("  sandbox: {}", l.line());
        }
    }
    if let Some(n) = &r.server_name {
        say!(
            "  server: {n} {}",
            r.server_version.as_deref().unwrap_or("")
        );
    }
    if let Some(caps) = r.capabilities.as_ref().and_then(|c| c.as_object()) {
        let names: Vec<&str> = caps.keys().map(String::as_str).collect();
        say!("  capabilities: {}", names.join(", "));
    }
    if r.ok {
        say!(
            "  {} tool{}:",
            r.tools.len(),
            if r.tools.len() == 1 { "" } else { "s" }
        );
        for t in &r.tools {
            let mut hints = Vec::new();
            if t.read_only {
                hints.push("read-only");
            }
            match t.destructive {
                Some(true) => hints.push("destructive"),
                Some(false) => hints.push("not destructive"),
                None => {}
            }
            say!("    {:<32} {}", t.name, hints.join(", "));
        }
    }
    if let Some(n) = r.prompts {
        say!("  prompts: {n}");
    }
    if let Some(n) = r.resources {
        say!("  resources: {n}");
    }
    for w in &r.warnings {
        say!("  warning: {w}");
    }
    if let Some(f) = &r.fix {
        say!("  fix: {f}");
    }
    if !r.ok && !r.stderr.is_empty() {
        say!("  last stderr lines:");
        for l in &r.stderr {
            say!("    {l}");
        }
    }
}

pub fn activity(rows: &[CallRecord]) {
    if rows.is_empty() {
        say!("No calls yet.");
        return;
    }
    say!(
        "{:<10} {:<14} {:<32} {:<20} {:<8} {:>8} OUTCOME",
        "AGO",
        "CLIENT",
        "TOOL",
        "DECISION",
        "BY",
        "MS"
    );
    let now = gatehouse::logs::now_ms();
    for r in rows {
        let ago = human_secs(now.saturating_sub(r.time_ms) / 1000);
        say!(
            "{:<10} {:<14} {:<32} {:<20} {:<8} {:>8} {}",
            ago,
            r.profile.as_deref().unwrap_or("default"),
            gatehouse::text::reveal(&format!("{}__{}", r.server, r.tool)),
            r.decision.as_str(),
            r.decided_by.as_str(),
            r.duration_ms,
            r.outcome.as_str()
        );
        if let Some(rule) = &r.rule {
            say!(
                "{:<10} decided by the rule {}",
                "",
                gatehouse::text::reveal(rule)
            );
        }
        if r.flags.hidden_characters {
            say!(
                "{:<10} contains hidden characters: {} — arguments {}",
                "",
                who(
                    r.profile.as_deref().unwrap_or("default"),
                    r.client.as_deref()
                ),
                gatehouse::text::reveal(&gatehouse::text::cut(
                    &gatehouse::text::json_escapes_revealed(&r.arguments),
                    400
                ))
            );
        }
        if let Some(like) = &r.flags.imitates {
            say!(
                "{:<10} the client's name imitates \"{}\": {}",
                "",
                gatehouse::text::reveal(like),
                who(
                    r.profile.as_deref().unwrap_or("default"),
                    r.client.as_deref()
                )
            );
        }
    }
}

/// `rules test`: the rules that cannot match first, then each past call then and now.
pub fn rules_report(r: &gatehouse::hub::RulesReport) {
    use gatehouse::text::reveal;
    for w in &r.warnings {
        say!("warning: {w}");
    }
    if r.calls.is_empty() {
        say!("No recorded calls in that range.");
        return;
    }
    say!(
        "{:<21} {:<32} {:<20} {:<6} RULE",
        "TIME",
        "TOOL",
        "WAS",
        "WOULD"
    );
    let mut counts = std::collections::BTreeMap::new();
    for c in &r.calls {
        *counts.entry(c.would.as_str()).or_insert(0usize) += 1;
        say!(
            "{:<21} {:<32} {:<20} {:<6} {}",
            c.time,
            reveal(&format!("{}__{}", c.server, c.tool)),
            c.was,
            c.would,
            c.rule.as_deref().map(reveal).unwrap_or_default()
        );
    }
    let n = |k| counts.get(k).copied().unwrap_or(0);
    say!(
        "{} calls: {} would be allowed, {} denied, {} asked.",
        r.calls.len(),
        n("allow"),
        n("deny"),
        n("ask")
    );
}

/// Remembered answers, newest first.
pub fn grants(rows: &[gatehouse::approval::Grant]) {
    if rows.is_empty() {
        say!("No remembered answers: every call that asks will ask.");
        return;
    }
    let now = gatehouse::logs::now_ms();
    say!(
        "{:<12} {:<32} {:<14} {:<10} FOR",
        "SCOPE",
        "TOOL",
        "CLIENT",
        "AGO"
    );
    for g in rows {
        let ago = if g.since_ms == 0 {
            "-".into()
        } else {
            human_secs(now.saturating_sub(g.since_ms) / 1000)
        };
        let scope = g.scope.as_str();
        let mut what = match (&g.definition, &g.session) {
            (Some(d), _) => format!("definition {d}…"),
            (None, Some(s)) => format!(
                "session {s} ({})",
                gatehouse::text::reveal(g.client.as_deref().unwrap_or("unnamed client"))
            ),
            _ => String::new(),
        };
        if let Some(d) = &g.arguments_digest {
            what.push_str(&format!(
                ", arguments {}…",
                d.chars().take(12).collect::<String>()
            ));
        }
        say!(
            "{:<12} {:<32} {:<14} {:<10} {what}",
            scope,
            gatehouse::text::reveal(&format!("{}__{}", g.server, g.tool)),
            g.profile.as_deref().unwrap_or("default"),
            ago
        );
    }
    say!("Revoke in the app's Permissions view, or all of a tool's with `gatehouse approvals --forget SERVER__TOOL`.");
}

/// A name a client or a server gave, quoted and with hidden characters shown.
pub fn quoted(name: &str) -> String {
    format!("\"{}\"", gatehouse::text::reveal(name))
}

/// Who asks, as a person should read it: the client profile (the token's), then what the client
/// says it is, quoted and with hidden characters shown.
pub fn who(profile: &str, said: Option<&str>) -> String {
    match said {
        Some(name) => format!(
            "client profile {profile} — says \"{}\"",
            gatehouse::text::reveal(name)
        ),
        None => format!("client profile {profile} — gives no name"),
    }
}

/// The protocol a server speaks, as a line above its tools.
pub fn protocol_line(s: &ServerStatus) {
    match (&s.protocol_version, s.era) {
        (Some(v), Some(e)) => say!("{} speaks MCP {v} ({})", s.id, e.as_str()),
        (Some(v), None) => say!("{} speaks MCP {v}", s.id),
        _ => {}
    }
}

pub fn tools_table(rows: &[ToolInfo], profile: Option<&str>) {
    if rows.is_empty() {
        say!("No tools: no server is running yet (see `gatehouse status`).");
        return;
    }
    if let Some(p) = profile {
        let budget = rows.first().map_or(0, |r| r.budget);
        say!("As client profile {p}'s clients see them (each name at most {budget} characters):");
    }
    for r in rows {
        let name = match (profile, &r.shown) {
            (Some(_), Some(shown)) => shown.as_str(),
            _ => r.name.as_str(),
        };
        // A name the model APIs would refuse once the client adds its prefix: said, never
        // silently cut.
        let over = profile.is_some() && r.budget > 0 && name.chars().count() > r.budget;
        let hints: Vec<&str> = r
            .annotations
            .as_ref()
            .and_then(|a| a.as_object())
            .map(|a| {
                [
                    ("readOnlyHint", "read-only"),
                    ("destructiveHint", "destructive"),
                    ("idempotentHint", "idempotent"),
                    ("openWorldHint", "open-world"),
                ]
                .iter()
                .filter(|(k, _)| a.get(*k) == Some(&serde_json::Value::Bool(true)))
                .map(|(_, label)| *label)
                .collect()
            })
            .unwrap_or_default();
        say!(
            "{:<48} {:<30} {}",
            name,
            r.title.as_deref().unwrap_or(""),
            hints.join(",")
        );
        if over {
            say!(
                "    warning: {} characters, over this client's {}: with its prefix the name passes 64, which the model APIs refuse",
                name.chars().count(),
                r.budget
            );
        }
    }
}

/// `secret ls`: name, set or not (or why it could not be asked), and the servers using it.
pub fn secrets(rows: &[(String, Result<bool, String>, Vec<String>)], as_json: bool) {
    #[derive(Serialize)]
    struct Row<'a> {
        name: &'a str,
        set: Option<bool>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a str>,
        servers: &'a [String],
    }
    if as_json {
        let v: Vec<Row> = rows
            .iter()
            .map(|(name, set, servers)| Row {
                name,
                set: set.as_ref().ok().copied(),
                error: set.as_ref().err().map(String::as_str),
                servers,
            })
            .collect();
        json(&v);
    } else if rows.is_empty() {
        say!("The config references no secrets. Use {{\"secret\": \"NAME\"}} in a server's env or headers.");
    } else {
        say!("{:<32} {:<8} USED BY", "NAME", "SET");
        for (n, set, servers) in rows {
            let set = match set {
                Ok(true) => "yes".to_owned(),
                Ok(false) => "no".to_owned(),
                Err(e) => format!("? ({e})"),
            };
            let used = if servers.is_empty() {
                "no server yet".to_owned()
            } else {
                servers.join(", ")
            };
            say!("{n:<32} {set:<8} {used}");
        }
    }
}

pub fn human_secs(s: u64) -> String {
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{}s", s / 60, s % 60),
        _ => format!("{}h{}m", s / 3600, (s % 3600) / 60),
    }
}
