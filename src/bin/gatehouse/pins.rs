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
        held_calls(&calls);
    }
    for c in &changes {
        change(c);
    }
    Ok(())
}

/// The held calls, for a person: who asks, what, why, and the answers.
fn held_calls(rows: &[ApprovalRequest]) {
    use gatehouse::text::reveal;
    if rows.is_empty() {
        say!("No calls are waiting for approval.");
        return;
    }
    let now = gatehouse::logs::now_ms();
    for r in rows {
        let left = r.expires_at.saturating_sub(now) / 1000;
        // Behind another, its countdown has not started.
        let when = if r.queued {
            "waits its turn".to_owned()
        } else {
            format!("{left} s left")
        };
        say!(
            "{}  {} on {}  ({when})",
            r.id,
            reveal(&r.exposed),
            reveal(&r.server)
        );
        if !r.goes_to.is_empty() {
            say!("    {}", reveal(&r.goes_to));
        }
        // Who asks is the token's profile; the name is only what the client says of itself.
        let profile = r.client.profile.as_deref().unwrap_or("default");
        say!("    {}", print::who(profile, r.client.name.as_deref()));
        if let Some(like) = &r.client.imitates {
            say!(
                "    warning: this client's name imitates \"{}\" — it is not that client's name; the token is profile {profile}'s",
                reveal(like)
            );
        }
        if r.hidden_characters {
            say!("    warning: contains hidden characters (shown as ⟨U+XXXX⟩ below): read the call as shown, not as a terminal would draw it");
        }
        say!("    asking because {}", r.reason.text());
        if let Some(g) = r.client.gives_up_after_secs {
            say!("    the client gives up after {g} s: answer before then, or it will have left");
        }
        let covers: Vec<String> = r
            .client
            .covers
            .iter()
            .map(|c| reveal(c).into_owned())
            .collect();
        match covers.as_slice() {
            [] => say!(
                "    --scope always covers client profile {profile} (no other client seen on it)"
            ),
            others => say!(
                "    --scope always covers client profile {profile}: also {}",
                others.join(", ")
            ),
        }
        if let Some(ends) = r.client.session_ends_ms {
            // A 2026-07-28 client has no protocol session.
            say!(
                "    --scope session covers this client (same token and name) for {} more",
                print::human_secs(ends.saturating_sub(now) / 1000)
            );
        }
        if let Some(c) = &r.changed {
            say!(
                "    the tool's definition changed since it was trusted: {}",
                c.fields.join(", ")
            );
        }
        for line in gatehouse::text::json_for_person(r.arguments.get()).lines() {
            say!("    {line}");
        }
        say!(
            "    gatehouse approve {} [--scope once|session|always]   |   gatehouse deny {} [--reason TEXT]",
            r.id, r.id
        );
    }
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
