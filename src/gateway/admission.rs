//! Admission: what one call to a tool may do — run free, wait for the person, or be refused —
//! decided from the one policy (`approval::policy::evaluate`, the argument rules' ruling among
//! its layers), then earlier answers (a grant for this tool, or for this exact call). The
//! approve phase calls down into [`recheck`] when an answer arrives; nothing here calls back up.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;

use super::answer::tool_error;
use super::context::Cx;
use super::session::ClientSession;
use crate::activity::Decision;
use crate::approval::policy::{Decision as Policy, Verdict};
use crate::approval::rules::Ruling;
use crate::approval::{ApprovalRequest, AskReason, ClientRef, Scope};
use crate::supervisor::status::ToolDef;
use crate::supervisor::ServerHandle;

/// What the policy (and earlier answers) make of one call.
pub(super) enum Admission {
    /// Runs without asking; the decision for the activity log.
    Free(Decision),
    /// Waits for the person's answer.
    Held(Box<Gate>),
    /// Never runs: the decision for the activity log and the `isError` result for the client.
    Refused(Decision, String),
}

/// A call held for approval.
pub(super) struct Gate {
    pub request: ApprovalRequest,
    pub hash: String,
    pub timeout: std::time::Duration,
    /// The call's arguments as the client sent them (the request shows them masked): what the
    /// recheck and the rules judge when the answer comes is what will run.
    pub arguments: Box<RawValue>,
    /// The same arguments' one reading (`crate::arguments::read`), which the rules judge.
    pub value: Option<Value>,
}

/// What a held call finds when the person has allowed it and it is about to run.
pub(super) enum Recheck {
    /// Nothing changed that the answer did not cover.
    Go,
    /// The tool's definition is not the one the person saw: ask again, showing the change.
    AskAgain(Box<Gate>),
    /// It may no longer run (disabled, removed, stopped): the text (the tool named) and
    /// the decision for the activity log.
    Refused(String, Decision),
}

/// An admission and the rule that decided it, when one did (the activity row names it).
pub(super) struct Admitted {
    pub admission: Admission,
    pub rule: Option<Ruling>,
}

/// The policy for one call, then earlier answers: free, held for the person, or refused (a
/// disabled tool, a deny rule).
pub(super) fn admit(
    cx: &Cx,
    server: &ServerHandle,
    def: &Arc<ToolDef>,
    exposed: &str,
    (arguments, value): (Option<&RawValue>, Option<&Value>),
) -> Admitted {
    let (s, tool) = (&cx.session, def.name.as_str());
    let (verdict, rule) = verdict(cx, server, def, Some(value));
    let done = |admission| Admitted {
        admission,
        rule: rule.clone().filter(|_| verdict.by_rule),
    };
    match verdict.decision {
        Policy::Allow => return done(Admission::Free(Decision::Allowed)),
        Policy::Disabled => return done(Admission::Refused(Decision::Disabled, disabled(exposed))),
        Policy::Deny => {
            let text = rule.as_ref().map_or_else(String::new, refused_by);
            return done(Admission::Refused(Decision::Denied, tool_error(&text)));
        }
        Policy::Ask => {}
    }
    let hub = &cx.hub;
    let broker = hub.approvals();
    let changed = broker.check_definition(server.id().as_str(), def);
    let masked = masked_arguments(hub.redactions(), arguments);
    let arguments_digest = crate::approval::arguments_digest(masked.get());
    if changed.is_none() {
        let grant = crate::approval::Covered {
            profile: s.profile.as_deref(),
            session: &s.id,
            server: server.id().as_str(),
            tool,
            hash: def.hash(),
            arguments_digest: &arguments_digest,
        };
        match broker.granted(&grant) {
            Some(Scope::Always) => return done(Admission::Free(Decision::RememberedAlways)),
            Some(Scope::Exact | Scope::ExactAlways) => {
                return done(Admission::Free(Decision::RememberedExact))
            }
            Some(_) => return done(Admission::Free(Decision::RememberedSession)),
            None => {}
        }
    }
    let config = hub.config();
    let meta = def.meta();
    let timeout = std::time::Duration::from_secs(config.approval.timeout_secs.max(1));
    let now = crate::logs::now_ms();
    let reason = match changed {
        Some(_) => AskReason::Changed,
        None => verdict.reason.unwrap_or_default(),
    };
    let request = ApprovalRequest {
        kind: crate::approval::PinKind::Tool,
        id: broker.next_id(),
        client: client_ref(s, cx.recent_clients()),
        server: server.id().to_string(),
        tool: tool.to_owned(),
        exposed: exposed.to_owned(),
        goes_to: config
            .servers
            .get(server.id())
            .map(goes_to)
            .unwrap_or_default(),
        title: meta.title.clone(),
        description: meta.description.clone(),
        annotations: meta.annotations.clone(),
        // Approvers see the arguments with known secret values masked, never the values.
        arguments: masked,
        arguments_digest,
        requested_at: now,
        expires_at: now + timeout.as_millis() as u64,
        queued: false,
        reason,
        // A stale rule's own problem and fix, after the reason's sentence.
        reason_text: match rule.as_ref().and_then(|r| r.stale.as_deref()) {
            Some(why) if reason == AskReason::StaleRule => format!("{} — {why}", reason.text()),
            _ => reason.text().to_owned(),
        },
        changed,
        digest: String::new(),
        hidden_characters: false,
        asked_in_client: false,
        suggested_rule: None,
    }
    .seal();
    let sent = arguments.map_or_else(
        || RawValue::from_string("{}".into()).unwrap_or_default(),
        ToOwned::to_owned,
    );
    done(Admission::Held(Box::new(Gate {
        request,
        hash: def.hash().to_owned(),
        timeout,
        arguments: sent,
        value: value.cloned(),
    })))
}

/// The refusal of a deny rule, naming it.
fn refused_by(r: &Ruling) -> String {
    format!(
        "Gatehouse did not run this call: your rule {} ({}) refuses it.",
        r.name, r.text
    )
}

/// Who is asking, as approvers see it: the token's profile first, the name the client gives
/// itself (and whom that name imitates, if it does, among the `recent` clients), whom an
/// "always" covers.
fn client_ref(s: &ClientSession, recent: Vec<crate::profiles::Connected>) -> ClientRef {
    let info = s.info();
    let imitates = info.name.as_deref().and_then(|name| {
        crate::text::imitation::imitates(name, recent.iter().map(|c| c.name.as_str()))
    });
    ClientRef {
        gives_up_after_secs: info
            .name
            .as_deref()
            .and_then(crate::profiles::known_timeout_secs),
        name: info.name,
        session: s.id.clone(),
        profile: s.profile.clone(),
        session_ends_ms: s.expires_ms,
        covers: others_on_profile(s, recent),
        imitates,
    }
}

/// The other clients (name and version) seen on `s`'s profile in the last 5 minutes
/// (`recent`): who an "always" answered for this call covers too.
fn others_on_profile(s: &ClientSession, recent: Vec<crate::profiles::Connected>) -> Vec<String> {
    let profile = s.profile.as_deref().unwrap_or("default");
    let me = s.info();
    let names: Vec<String> = recent.iter().map(|c| c.name.clone()).collect();
    let mut others: Vec<String> = recent
        .into_iter()
        .filter(|c| c.profile == profile)
        .filter(|c| Some(&c.name) != me.name.as_ref() || c.version != me.version)
        .map(|c| {
            // A borrowed name is marked here too, as wherever a client's name is shown.
            let like = c.imitates.clone().or_else(|| {
                crate::text::imitation::imitates(&c.name, names.iter().map(String::as_str))
            });
            let name = crate::text::imitation::marked(&c.name, like.as_deref());
            match c.version {
                Some(v) => format!("{name} {v}"),
                None => name,
            }
        })
        .collect();
    others.sort();
    others.dedup();
    others
}

/// What a call to this tool from this session does, and why it asks: the one policy
/// ([`crate::approval::policy::evaluate`]) with the session's client profile and — for a call
/// (`arguments` given: its one reading, `None` inside when it has none) — the argument rules'
/// ruling as layers.
pub(super) fn verdict(
    cx: &Cx,
    server: &ServerHandle,
    def: &ToolDef,
    arguments: Option<Option<&Value>>,
) -> (Verdict, Option<Ruling>) {
    let (hub, s) = (&cx.hub, &cx.session);
    let config = hub.config();
    let profile = super::context::profile_in(&config, s.profile.as_deref());
    let rule = arguments.and_then(|a| {
        let layer = s.profile.as_deref().zip(profile.as_ref());
        crate::approval::rules::for_call(
            &config,
            (server.id().as_str(), &def.name, def.raw.get()),
            layer,
            a,
        )
    });
    let verdict = hub.tool_verdict(&config, server.id(), def, profile.as_ref(), rule.as_ref());
    (verdict, rule)
}

/// Checks a held call again at the moment it would run, after the person allowed the
/// definition with hash `asked`: the tool must still be listed under `exposed` by the same
/// server, running, enabled, defined as the person saw it, and no rule may refuse it now.
pub(super) fn recheck(
    cx: &Cx,
    server: &ServerHandle,
    exposed: &str,
    asked: &str,
    (arguments, value): (&RawValue, Option<&Value>),
) -> Recheck {
    let gone = |decision| {
        Recheck::Refused(
            format!("{exposed} was disabled or removed while the call waited for approval, so it was not run."),
            decision,
        )
    };
    if !cx.hub.config().servers.contains_key(server.id()) {
        return gone(Decision::Disabled);
    }
    let Some(entry) = cx.catalog().lookup(exposed).cloned() else {
        // Disabled tools leave the catalog; so do a stopped server's.
        return match server.state() {
            st if st.offers_tools() => gone(Decision::Disabled),
            _ => Recheck::Refused(not_running(server, exposed), Decision::NotRunning),
        };
    };
    if &entry.server != server.id() {
        return gone(Decision::Disabled);
    }
    // An on-demand server that idled while the call waited starts again when it is sent.
    if !server.state().offers_tools() {
        return Recheck::Refused(not_running(server, exposed), Decision::NotRunning);
    }
    if entry.tool.hash() == asked {
        let (v, rule) = verdict(cx, server, &entry.tool, Some(value));
        return match (v.decision, rule) {
            (Policy::Disabled, _) => gone(Decision::Disabled),
            (Policy::Deny, Some(r)) => Recheck::Refused(refused_by(&r), Decision::Denied),
            _ => Recheck::Go,
        };
    }
    match admit(cx, server, &entry.tool, exposed, (Some(arguments), value)).admission {
        Admission::Free(_) => Recheck::Go,
        Admission::Held(g) => Recheck::AskAgain(g),
        Admission::Refused(d, _) => gone(d),
    }
}

/// The refusal of a disabled tool.
pub(super) fn disabled(exposed: &str) -> String {
    tool_error(&format!(
        "{exposed} is disabled in Gatehouse (\"enabled\": false), so it was not run."
    ))
}

/// Why a call to a server that is not running was not made (a sign-in it needs named).
pub(super) fn not_running(server: &ServerHandle, tool: &str) -> String {
    let status = server.status();
    if status.state == crate::supervisor::State::NeedsSignIn {
        return format!(
            "Sign in to {id} again: {tool} was not run because \"{id}\" needs a sign-in. Sign in from Gatehouse's Servers view, or run `gatehouse auth login {id}`.",
            id = status.id
        );
    }
    let mut text = format!(
        "Server \"{}\" is {}, so {tool} was not run.",
        status.id, status.state
    );
    if let Some(e) = status.last_error {
        text.push_str(&format!(" Last error: {e}"));
    }
    text
}

fn masked_arguments(
    redactions: &crate::secrets::Redactions,
    arguments: Option<&RawValue>,
) -> Box<RawValue> {
    let raw = arguments.map_or("{}", |a| a.get());
    let masked = redactions.mask(raw);
    RawValue::from_string(masked)
        .or_else(|_| {
            RawValue::from_string("{\"(hidden)\":\"the arguments contain a secret value\"}".into())
        })
        .unwrap_or_default()
}

/// Where a call to `cfg`'s server goes, in the person's words: `runs on this computer as
/// PROGRAM` or `sends to HOST`.
fn goes_to(cfg: &crate::config::ServerConfig) -> String {
    match &cfg.transport {
        crate::config::Transport::Stdio(t) => {
            format!(
                "runs on this computer as {}",
                crate::text::cut(&t.command, 200)
            )
        }
        crate::config::Transport::Remote(r) => {
            let host = reqwest::Url::parse(&r.url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_else(|| r.url.clone());
            format!(
                "sends to {} (a remote server)",
                crate::text::cut(&host, 253)
            )
        }
    }
}
