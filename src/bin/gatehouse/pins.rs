//! What waits for the person besides held calls, and what is pinned: `gatehouse approvals` lists
//! held changes to what a server says (a prompt, its instructions, an app's HTML) after the held
//! calls, in one list (`--json`: one array, each with its `kind`); `gatehouse approve ID` /
//! `deny ID` answer them like a call; `gatehouse pins [--json]` lists every pin.

use gatehouse::approval::{ApprovalRequest, HeldChange, PinRow};
use gatehouse::control::{ControlClient, Request};
use gatehouse::text::reveal;

use crate::ask::ask;
use crate::print;

/// `approvals` without `--grants`/`--forget`: held calls, then held changes.
pub async fn waiting(client: &ControlClient, json: bool) -> Result<(), String> {
    let calls = ask::<Vec<ApprovalRequest>>(client, Request::Approvals).await?;
    let changes = ask::<Vec<HeldChange>>(client, Request::Changes).await?;
    if json {
        let mut all: Vec<serde_json::Value> = Vec::with_capacity(calls.len() + changes.len());
        all.extend(calls.iter().filter_map(|c| serde_json::to_value(c).ok()));
        all.extend(changes.iter().filter_map(|c| serde_json::to_value(c).ok()));
        print::json(&all);
        return Ok(());
    }
    if calls.is_empty() && changes.is_empty() {
        say!("Nothing is waiting for approval.");
        return Ok(());
    }
    if !calls.is_empty() {
        print::approvals(&calls);
    }
    for c in &changes {
        change(c);
    }
    Ok(())
}

/// One held change, for a person: what changed, the diff (or sizes and hashes), the answers.
fn change(c: &HeldChange) {
    say!("{}  {} changed on {}", c.id, what(c), reveal(&c.server));
    say!("    {}", reveal(&c.reason_text));
    if let Some(args) = &c.arguments {
        say!("    with arguments {}", reveal(args));
    }
    say!(
        "    approved {} bytes (sha256 {}) → now {} bytes (sha256 {})",
        c.old_bytes,
        short(&c.old_hash),
        c.new_bytes,
        short(&c.new_hash)
    );
    match &c.diff {
        Some(diff) => {
            for line in diff.lines() {
                say!("    {}", gatehouse::text::reveal(line));
            }
        }
        None => {
            say!("    the new content (shown as text, never rendered):");
            for line in c.new_text.lines() {
                say!("    | {}", gatehouse::text::reveal(line));
            }
        }
    }
    say!(
        "    gatehouse approve {} (it becomes the pin)   |   gatehouse deny {} (the approved version stays)",
        c.id, c.id
    );
}

fn what(c: &HeldChange) -> String {
    match c.kind {
        gatehouse::approval::PinKind::Instructions => "instructions".to_owned(),
        kind => format!("{} {}", kind.as_str(), reveal(&c.name)),
    }
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// `approve ID` / `deny ID` of a held change.
pub async fn answer(client: &ControlClient, req: Request, allowed: bool) -> Result<(), String> {
    let c = ask::<HeldChange>(client, req).await?;
    match allowed {
        true => say!(
            "approved the change to {} of {}: it is the pin now",
            what(&c),
            reveal(&c.server)
        ),
        false => say!(
            "kept the approved {} of {}: clients keep getting it",
            what(&c),
            reveal(&c.server)
        ),
    }
    Ok(())
}

/// `pins [--json]`.
pub async fn pins(client: &ControlClient, json: bool) -> Result<(), String> {
    let rows = ask::<Vec<PinRow>>(client, Request::Pins).await?;
    if json {
        print::json(&rows);
        return Ok(());
    }
    if rows.is_empty() {
        say!("Nothing is pinned yet: a server's tools, prompts, instructions and apps are pinned when first seen.");
        return Ok(());
    }
    let now = gatehouse::logs::now_ms();
    say!(
        "{:<13} {:<20} {:<40} {:<12} SINCE",
        "KIND",
        "SERVER",
        "NAME",
        "HASH"
    );
    for r in &rows {
        let mut name = reveal(&r.name).into_owned();
        if let Some(a) = &r.arguments {
            name = format!("{name} {}", reveal(a));
        }
        let since = match r.since {
            0 => "-".to_owned(),
            t => format!("{} ago", print::human_secs(now.saturating_sub(t) / 1000)),
        };
        say!(
            "{:<13} {:<20} {:<40} {:<12} {since}",
            r.kind.as_str(),
            reveal(&r.server),
            name,
            short(&r.hash)
        );
    }
    Ok(())
}
