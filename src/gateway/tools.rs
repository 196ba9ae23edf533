//! `tools/call`: the exposed name is looked up in the catalog, the call is admitted (free, held
//! for the person, or refused) and then forwarded with the server's own tool name. Each fact of
//! a call — the name it resolves to, whether the profile sees it, its entry — is decided once,
//! here; what comes after (the headers' check, validation, limits, admission) takes it as found.

use serde_json::value::RawValue;
use serde_json::Value;

use super::admission::{admit, disabled, not_running, Admission};
use super::answer::tool_error;
use super::audit::{record, CallMeta};
use super::catalog::Entry;
use super::context::Cx;
use super::forward::{forward, Pass, Tokens, ToolCall};
use super::names::Resolved;
use super::outcome::{Out, Outcome, Stream};
use super::params::Params;
use crate::activity::Decision;
use crate::approval::policy::Decision as Policy;
use crate::jsonrpc::{self, ErrorCode};
use crate::naming::{exposed_name, split_server};
use crate::supervisor::{ServerHandle, State};

mod headers;
mod validate;

pub use headers::ParamHeaders;

/// `tools/call` from `cx`'s client; `headers` are the `Mcp-Param-*` headers of a 2026-07-28
/// request over HTTP, checked against the arguments (`None`: a transport without them).
pub(super) fn call(
    cx: &Cx,
    id: &RawValue,
    params: Option<&RawValue>,
    headers: Option<&ParamHeaders>,
) -> Outcome {
    call_once(cx, id, params, headers, false)
}

/// An idle on-demand server's call (or a starting server's): the server is started and
/// waited for (within its startup timeout), then the call is taken again from the top —
/// looked up, its `Mcp-Param-*` headers checked against the tool as it is now listed, admitted
/// and forwarded as any other. A client that stops waiting meanwhile drops the stream, and no
/// call is made for it.
fn start_then_call(
    cx: &Cx,
    id: &RawValue,
    params: Option<&RawValue>,
    headers: Option<&ParamHeaders>,
    server: ServerHandle,
) -> Outcome {
    let (tx, rx) = tokio::sync::mpsc::channel(super::session::OUT_QUEUE);
    let (cx, id, events) = (cx.clone(), id.to_owned(), tx.clone());
    let params = params.map(ToOwned::to_owned);
    let headers = headers.cloned();
    let run = async move {
        if let Err(why) = server.demand().await {
            tracing::info!(server = %server.id(), "started for a call, but: {why}");
        }
        cx.tools.refresh(&cx.hub, &cx.sessions);
        match call_once(&cx, &id, params.as_deref(), headers.as_ref(), true) {
            Outcome::Reply(line) | Outcome::Error(line, _) => Some(line),
            Outcome::Stream(mut more) => {
                while let Some(out) = more.recv().await {
                    match out {
                        Out::Final(line) => return Some(line),
                        event => {
                            if events.send(event).await.is_err() {
                                return None;
                            }
                        }
                    }
                }
                None
            }
            Outcome::Accepted => None,
        }
    };
    Outcome::Stream(Stream::running(rx, tx, Box::pin(run)))
}

/// One `tools/call` taken from the top; `started` once its server was started for it.
fn call_once(
    cx: &Cx,
    id: &RawValue,
    params: Option<&RawValue>,
    headers: Option<&ParamHeaders>,
    started: bool,
) -> Outcome {
    // The params read once: the name, the arguments and `_meta` found, the rest stepped over.
    let p = match Params::read(id, params, "tools/call", "name") {
        Ok(p) => p,
        Err(reply) => return reply,
    };
    let name = match canonical(cx, id, &p.value) {
        Ok(name) => name,
        Err(refused) => return refused,
    };
    let arguments = p.arguments();
    // The arguments read once, as I-JSON: every check below, the person's view and the server
    // read this one value; a text servers could read another way is refused, never passed on.
    let value = match crate::arguments::read(arguments.map(RawValue::get)) {
        Ok(v) => v,
        Err(why) => {
            let text = format!("Invalid params: {why}");
            return Outcome::error(id.get(), ErrorCode::InvalidParams, &text);
        }
    };
    let args = value.as_ref();
    let (entry, server) = match found(cx, id, params, &name, (arguments, args), headers, started) {
        Ok(found) => found,
        Err(answered) => return answered,
    };
    let mut meta = CallMeta::new(&server, &entry.tool.name, raw_or_empty(arguments));
    if server.state() != State::Running {
        let text = tool_error(&not_running(&server, &name));
        return refuse(cx, id, meta, Decision::NotRunning, text);
    }
    if let Err(refused) = checked(cx, id, (&server, &entry, &name), args, &meta) {
        return refused;
    }
    let admitted = admit(cx, &server, &entry.tool, &name, (arguments, args));
    meta.rule = admitted.rule.map(|r| r.name);
    let pass = match admitted.admission {
        Admission::Free(d) => Pass::Free(d),
        Admission::Held(g) => Pass::Held(g),
        Admission::Refused(d, text) => return refuse(cx, id, meta, d, text),
    };
    // The server gets the client's params with its own tool name, and our progress token.
    let tokens = Tokens::for_client(cx, p.progress_token());
    let own = jsonrpc::json_string(&entry.tool.name);
    let Some(upstream) = p.upstream(&own, tokens.ours()) else {
        return Outcome::error(id.get(), ErrorCode::InvalidParams, "Invalid params");
    };
    let tool = ToolCall { name, pass, meta };
    forward(
        cx,
        id,
        server,
        "tools/call",
        upstream,
        tokens,
        (Some(tool), None),
    )
}

/// The canonical name the client's name resolves to in its profile's view, or the refusal of an
/// ambiguous name or a removed server's.
#[allow(clippy::result_large_err)]
fn canonical(cx: &Cx, id: &RawValue, name: &str) -> Result<String, Outcome> {
    match cx.view().resolve(name) {
        Resolved::One(canonical) => Ok(canonical),
        Resolved::Ambiguous(candidates) => Err(Outcome::error(
            id.get(),
            ErrorCode::InvalidParams,
            &format!(
                "Ambiguous tool name {name}: more than one server has a tool of that name; call one of {}",
                candidates.join(", ")
            ),
        )),
        Resolved::Gone(canonical) => {
            let server = split_server(&canonical).map_or("", |(srv, _)| srv);
            if cx.hub.server(server).is_err() {
                // Its server was removed: the name means nothing else.
                return Err(Outcome::error(
                    id.get(),
                    ErrorCode::InvalidParams,
                    &format!(
                        "Unknown tool: {name} was server \"{server}\"'s tool ({canonical}), and that server is no longer configured; it was not run, and the name is not given to another server's tool"
                    ),
                ));
            }
            // Stopped: said as for any call to a server that is not running.
            Ok(canonical)
        }
        Resolved::Unknown => Ok(name.to_owned()),
    }
}

/// The tool the profile sees under `name` and its server — or what answers the call instead: the
/// server started first (an idle on-demand or a starting one, unless it was `started` for this
/// call already), a header that does not match its argument, or the tool unknown.
#[allow(clippy::result_large_err)]
fn found(
    cx: &Cx,
    id: &RawValue,
    params: Option<&RawValue>,
    name: &str,
    (raw, arguments): (Option<&RawValue>, Option<&Value>),
    headers: Option<&ParamHeaders>,
    started: bool,
) -> Result<(Entry, ServerHandle), Outcome> {
    let profile = cx.profile();
    let visible = |e: &Entry| {
        profile
            .as_ref()
            .is_none_or(|p| p.sees_tool(e.server.as_str(), name))
    };
    let Some(entry) = cx.catalog().lookup(name).filter(|e| visible(e)).cloned() else {
        // Its server is starting (at launch, or restarting): the call waits for it, then is
        // taken again (a client that calls at once, `printf … | serve --stdio`, is answered).
        let starting = split_server(name)
            .and_then(|(srv, _)| cx.hub.server(srv).ok())
            .filter(|h| h.state() == State::Starting);
        if let Some(server) = starting.filter(|_| !started) {
            return Err(start_then_call(cx, id, params, headers, server));
        }
        if profile.is_some() {
            // Outside a client's profile a tool does not exist for it: nothing more is said.
            return Err(Outcome::error(
                id.get(),
                ErrorCode::InvalidParams,
                &format!("Unknown tool: {name}"),
            ));
        }
        return Err(not_in_catalog(cx, id, name, raw_or_empty(raw)));
    };
    // A 2026-07-28 request's `Mcp-Param-*` headers against the arguments of the tool found —
    // before a start it asks for (a bad request starts nothing), and again after it, against the
    // tool as its server lists it then (what is checked is what runs).
    if let Some(headers) = headers {
        if let Err(why) = headers::check(&entry.tool, arguments, headers) {
            return Err(Outcome::error(id.get(), ErrorCode::HeaderMismatch, &why));
        }
    }
    let server = cx
        .hub
        .server(entry.server.as_str())
        .map_err(|e| Outcome::error(id.get(), ErrorCode::InvalidParams, &e.to_string()))?;
    // An idle on-demand server starts first: the call then runs against its live definitions
    // (a definition changed while it was idle is asked about again).
    let waits = matches!(server.state(), State::Idle | State::Starting);
    if waits && !started {
        return Err(start_then_call(cx, id, params, headers, server));
    }
    Ok((entry, server))
}

/// What is checked before a call can be admitted: its arguments against the tool's
/// `inputSchema` where the person asked for it, then the rate limits the person set — a call
/// over one is refused at once, never held for them.
#[allow(clippy::result_large_err)]
fn checked(
    cx: &Cx,
    id: &RawValue,
    (server, entry, name): (&ServerHandle, &Entry, &str),
    arguments: Option<&Value>,
    meta: &CallMeta,
) -> Result<(), Outcome> {
    let config = cx.hub.config();
    if config
        .servers
        .get(server.id())
        .is_some_and(|c| validate::wanted(c, &entry.tool.name))
    {
        if let Err(m) = validate::check(&entry.tool, arguments) {
            let data = m.data.to_string();
            let id = id.get();
            return Err(Outcome::error_with_data(
                id,
                ErrorCode::InvalidParams,
                &m.message,
                &data,
            ));
        }
    }
    let profile = super::context::profile_in(&config, cx.session.profile.as_deref());
    let limits = super::limits::applying(
        &config,
        cx.session.profile.as_deref().zip(profile.as_ref()),
        server.id(),
        &entry.tool.name,
        name,
    );
    if let Err(why) = cx.calls.limits.take(&limits, std::time::Instant::now()) {
        // The meta is the call's until it is forwarded: a refusal here records a copy of it.
        return Err(refuse(
            cx,
            id,
            meta.clone(),
            Decision::RateLimited,
            tool_error(&why),
        ));
    }
    Ok(())
}

/// The arguments as the activity log keeps them: as sent, `{}` when none were.
fn raw_or_empty(arguments: Option<&RawValue>) -> String {
    arguments.map_or_else(|| "{}".into(), |a| a.get().to_owned())
}

/// A name the catalog does not have. A client may hold a tool list from before its server
/// stopped: name the server and its state (or that the tool is disabled) rather than calling
/// the tool unknown.
fn not_in_catalog(cx: &Cx, id: &RawValue, name: &str, arguments: String) -> Outcome {
    let server = split_server(name).and_then(|(srv, _)| cx.hub.server(srv).ok());
    if let Some(server) = server {
        let def = server
            .tools()
            .iter()
            .find(|t| exposed_name(server.id().as_str(), &t.name) == name)
            .cloned();
        if server.state() != State::Running {
            // A stopped server lists no tools: the name after `__` is the best we know.
            let tool = split_server(name).map_or(name, |(_, t)| t);
            let meta = CallMeta::new(&server, tool, arguments);
            let text = tool_error(&not_running(&server, name));
            return refuse(cx, id, meta, Decision::NotRunning, text);
        }
        // A tool hidden by `enabled: false` is refused with a reason, not "unknown".
        if let Some(def) = def {
            let (v, _) = super::admission::verdict(cx, &server, &def, None);
            if v.decision == Policy::Disabled {
                let meta = CallMeta::new(&server, &def.name, arguments);
                return refuse(cx, id, meta, Decision::Disabled, disabled(name));
            }
        }
    }
    Outcome::error(
        id.get(),
        ErrorCode::InvalidParams,
        &format!("Unknown tool: {name}"),
    )
}

/// A call Gatehouse refuses without running it: recorded, answered with an isError result.
fn refuse(cx: &Cx, id: &RawValue, m: CallMeta, decision: Decision, result: String) -> Outcome {
    record(
        cx.hub.activity(),
        &cx.session,
        m,
        (
            decision,
            crate::approval::Decider::Policy,
            crate::activity::CallOutcome::NotRun,
        ),
        None,
        super::failure::text_of(result.as_bytes()),
    );
    Outcome::Reply(super::answer::ours(id.get(), &result, cx.session.era()))
}
