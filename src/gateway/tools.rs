//! `tools/call`: the exposed name is looked up in the catalog, the call is admitted (free, held
//! for the person, or refused) and then forwarded with the server's own tool name.

use std::sync::Arc;

use serde_json::value::RawValue;

use super::answer::tool_error;
use super::approve::{Gate, Recheck};
use super::audit::CallMeta;
use super::forward::{Pass, ToolCall};
use super::names::Resolved;
use super::session::ClientSession;
use super::{member_params, Gateway, Outcome};
use crate::activity::Decision;
use crate::approval::policy::Decision as Policy;
use crate::approval::{ApprovalRequest, AskReason, ClientRef, Scope};
use crate::jsonrpc::{self, ErrorCode};
use crate::naming::{exposed_name, split_server};
use crate::supervisor::status::ToolDef;
use crate::supervisor::ServerHandle;

mod validate;

/// What the policy (and earlier answers) make of one call.
pub(super) enum Admission {
    /// Runs without asking; the decision for the activity log.
    Free(Decision),
    /// Waits for the person's answer.
    Held(Box<Gate>),
    /// Never runs: the decision for the activity log and the `isError` result for the client.
    Refused(Decision, String),
}

impl Gateway {
    pub(super) fn call_tool(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        params: Option<&RawValue>,
    ) -> Outcome {
        self.call_tool_once(s, id, params, false)
    }

    /// An idle on-demand server's call (or a starting server's): the server is started and
    /// waited for (within its startup timeout), then the call is taken again from the top —
    /// looked up, admitted and forwarded as any other.
    fn start_then_call(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        params: Option<&RawValue>,
        server: ServerHandle,
    ) -> Outcome {
        let (tx, rx) = tokio::sync::mpsc::channel(super::session::OUT_QUEUE);
        let (gw, s, id) = (self.clone(), s.clone(), id.to_owned());
        let params = params.map(ToOwned::to_owned);
        tokio::spawn(async move {
            if let Err(why) = server.demand().await {
                tracing::info!(server = %server.id(), "started for a call, but: {why}");
            }
            // A client that stopped waiting while the server started gets no call made for it.
            if tx.is_closed() {
                return;
            }
            gw.refresh_catalog();
            match gw.call_tool_once(&s, &id, params.as_deref(), true) {
                Outcome::Reply(line) => {
                    let _ = tx.send(super::Out::Final(line)).await;
                }
                Outcome::Stream(mut more) => {
                    while let Some(out) = more.recv().await {
                        if tx.send(out).await.is_err() {
                            break;
                        }
                    }
                }
                Outcome::Accepted => {}
            }
        });
        Outcome::Stream(rx)
    }

    fn call_tool_once(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        params: Option<&RawValue>,
        started: bool,
    ) -> Outcome {
        let (mut p, name) = match member_params(id, params, "tools/call", "name") {
            Ok(x) => x,
            Err(reply) => return reply,
        };
        // The name the client sees → the canonical one everything underneath knows.
        let name = match self.view(s.profile.as_deref()).resolve(&name) {
            Resolved::One(canonical) => canonical,
            Resolved::Ambiguous(candidates) => {
                return Outcome::Reply(jsonrpc::error_line(
                    id.get(),
                    ErrorCode::InvalidParams,
                    &format!(
                        "Ambiguous tool name {name}: more than one server has a tool of that name; call one of {}",
                        candidates.join(", ")
                    ),
                ))
            }
            Resolved::Gone(canonical) => {
                let server = split_server(&canonical).map_or("", |(srv, _)| srv);
                if self.inner.hub.server(server).is_err() {
                    // Its server was removed: the name means nothing else.
                    return Outcome::Reply(jsonrpc::error_line(
                        id.get(),
                        ErrorCode::InvalidParams,
                        &format!(
                            "Unknown tool: {name} was server \"{server}\"'s tool ({canonical}), and that server is no longer configured; it was not run, and the name is not given to another server's tool"
                        ),
                    ));
                }
                // Stopped: said as for any call to a server that is not running.
                canonical
            }
            Resolved::Unknown => name,
        };
        let arguments = p
            .get("arguments")
            .map(|a| a.get().to_owned())
            .unwrap_or_else(|| "{}".into());
        let profile = self.profile_config(s);
        let visible = |e: &super::catalog::Entry| {
            profile
                .as_ref()
                .is_none_or(|p| p.sees_tool(e.server.as_str(), &name))
        };
        let Some(entry) = self.catalog().lookup(&name).filter(|e| visible(e)).cloned() else {
            // Its server is starting (at launch, or restarting): the call waits for it, then is
            // taken again (a client that calls at once, `printf … | serve --stdio`, is answered).
            let starting = split_server(&name)
                .and_then(|(srv, _)| self.inner.hub.server(srv).ok())
                .filter(|h| h.status().state == crate::supervisor::State::Starting);
            if let Some(server) = starting.filter(|_| !started) {
                return self.start_then_call(s, id, params, server);
            }
            if profile.is_some() {
                // Outside a client's profile a tool does not exist for it: nothing more is said.
                return Outcome::Reply(jsonrpc::error_line(
                    id.get(),
                    ErrorCode::InvalidParams,
                    &format!("Unknown tool: {name}"),
                ));
            }
            return self.not_in_catalog(s, id, &name, arguments);
        };
        let server = match self.inner.hub.server(entry.server.as_str()) {
            Ok(h) => h,
            Err(e) => {
                return Outcome::Reply(jsonrpc::error_line(
                    id.get(),
                    ErrorCode::InvalidParams,
                    &e.to_string(),
                ))
            }
        };
        // An idle on-demand server starts first: the call then runs against its live
        // definitions (a definition changed while it was idle is asked about again).
        let waits = matches!(
            server.status().state,
            crate::supervisor::State::Idle | crate::supervisor::State::Starting
        );
        if waits && !started {
            return self.start_then_call(s, id, params, server);
        }
        let meta = CallMeta::new(&server, &entry.tool.name, arguments);
        if server.status().state != crate::supervisor::State::Running {
            let text = tool_error(&not_running(&server, &name));
            return self.refuse(s, id, &meta, Decision::NotRunning, text);
        }
        // Where the person asked for it, arguments that do not match the tool's inputSchema are
        // refused before anything is held or forwarded.
        let config = self.inner.hub.config();
        if config
            .servers
            .get(server.id())
            .is_some_and(|c| validate::wanted(c, &entry.tool.name))
        {
            if let Err(m) = validate::check(&entry.tool, p.get("arguments").map(|a| &**a)) {
                return Outcome::Reply(jsonrpc::error_object_line(
                    id.get(),
                    &jsonrpc::error_object_with_data(
                        ErrorCode::InvalidParams,
                        &m.message,
                        &m.data.to_string(),
                    ),
                ));
            }
        }
        // Over a rate limit the person set: refused at once, never held for them.
        let limits = super::limits::applying(
            &config,
            s.profile.as_deref().zip(profile.as_ref()),
            server.id(),
            &entry.tool.name,
            &name,
        );
        if let Err(why) = self.inner.limits.take(&limits, std::time::Instant::now()) {
            return self.refuse(s, id, &meta, Decision::RateLimited, tool_error(&why));
        }
        let pass = match self.admit(
            s,
            &server,
            &entry.tool,
            &name,
            p.get("arguments").map(|a| &**a),
        ) {
            Admission::Free(d) => Pass::Free(d),
            Admission::Held(g) => Pass::Held(g),
            Admission::Refused(d, text) => return self.refuse(s, id, &meta, d, text),
        };
        let Ok(original) = RawValue::from_string(jsonrpc::json_string(&entry.tool.name)) else {
            return Outcome::Reply(jsonrpc::error_line(
                id.get(),
                ErrorCode::InvalidParams,
                "Invalid tool name",
            ));
        };
        p.insert("name".into(), original);
        self.forward(
            s,
            id,
            server,
            "tools/call",
            p,
            Some(ToolCall { name, pass, meta }),
        )
    }

    /// A modern `tools/call`'s `Mcp-Param-*` headers against its arguments, for a tool whose
    /// input schema annotates parameters with `x-mcp-header`: each annotated argument that is
    /// present has its header, once, equal to it (decoded; an integer compared as an integer,
    /// exactly, and only a fractional number as a float), and no header claims an argument
    /// that is absent. `header` gives every value of a header name.
    pub fn check_param_headers(
        &self,
        profile: &Option<String>,
        name: &str,
        arguments: Option<&str>,
        header: impl Fn(&str) -> Vec<String>,
    ) -> Result<(), String> {
        use crate::protocol::{decode_header_value, header_scalar, value_at};
        let catalog = self.catalog();
        let name = match self.view(profile.as_deref()).resolve(name) {
            Resolved::One(canonical) => canonical,
            _ => name.to_owned(),
        };
        let name = name.as_str();
        let Some(entry) = catalog.lookup(name) else {
            return Ok(()); // the call itself says the tool is unknown
        };
        let annotations = entry.tool.header_annotations();
        if annotations.is_empty() {
            return Ok(()); // most tools: nothing to check, the arguments are not parsed
        }
        // Read strictly: a key given twice would let the header match one value while the
        // server reads the other.
        let arguments = match arguments.map(crate::jsonrpc::strict::value) {
            None => serde_json::Value::Null,
            Some(Ok(v)) => v,
            Some(Err(e)) => return Err(format!("Invalid arguments: {e}")),
        };
        let config = self.inner.hub.config();
        let visible = profile.as_deref().is_none_or(|p| {
            config
                .clients
                .iter()
                .find(|(k, _)| k.as_str() == p)
                .is_some_and(|(_, v)| v.sees_tool(entry.server.as_str(), name))
        });
        if !visible {
            return Ok(());
        }
        for (path, token) in annotations {
            let header_name = format!("Mcp-Param-{token}");
            let values = header(&header_name.to_ascii_lowercase());
            let argument = path.join(".");
            if values.len() > 1 {
                return Err(format!(
                    "Header mismatch: {header_name} appears more than once"
                ));
            }
            let given = values.into_iter().next();
            let rendered = value_at(&arguments, &path).and_then(header_scalar);
            match (given, rendered) {
                (None, None) => {}
                (Some(_), None) => {
                    return Err(format!(
                        "Header mismatch: {header_name} is present but the argument {argument} is absent or has no header form"
                    ))
                }
                (None, Some(_)) => {
                    return Err(format!(
                        "Header mismatch: {header_name} is missing but the argument {argument} is present"
                    ))
                }
                (Some(raw), Some(body)) => {
                    let Some(decoded) = decode_header_value(&raw) else {
                        return Err(format!(
                            "Header mismatch: {header_name} carries a malformed base64 value"
                        ));
                    };
                    let same = decoded == body
                        || value_at(&arguments, &path)
                            .is_some_and(|v| crate::protocol::number_matches(&decoded, v));
                    if !same {
                        return Err(format!(
                            "Header mismatch: {header_name} header value does not match the argument {argument}"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// A name the catalog does not have. A client may hold a tool list from before its server
    /// stopped: name the server and its state (or that the tool is disabled) rather than calling
    /// the tool unknown.
    fn not_in_catalog(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        name: &str,
        arguments: String,
    ) -> Outcome {
        let server = split_server(name).and_then(|(srv, _)| self.inner.hub.server(srv).ok());
        if let Some(server) = server {
            let def = server
                .tools()
                .iter()
                .find(|t| exposed_name(server.id().as_str(), &t.name) == name)
                .cloned();
            if server.status().state != crate::supervisor::State::Running {
                // A stopped server lists no tools: the name after `__` is the best we know.
                let tool = split_server(name).map_or(name, |(_, t)| t);
                let meta = CallMeta::new(&server, tool, arguments);
                let text = tool_error(&not_running(&server, name));
                return self.refuse(s, id, &meta, Decision::NotRunning, text);
            }
            // A tool hidden by `enabled: false` is refused with a reason, not "unknown".
            if let Some(def) = def {
                if self.verdict(s, &server, &def).decision == Policy::Disabled {
                    let meta = CallMeta::new(&server, &def.name, arguments);
                    return self.refuse(s, id, &meta, Decision::Disabled, disabled(name));
                }
            }
        }
        Outcome::Reply(jsonrpc::error_line(
            id.get(),
            ErrorCode::InvalidParams,
            &format!("Unknown tool: {name}"),
        ))
    }

    /// A call Gatehouse refuses without running it: recorded, answered with an isError result.
    fn refuse(
        &self,
        s: &Arc<ClientSession>,
        id: &RawValue,
        m: &CallMeta,
        decision: Decision,
        result: String,
    ) -> Outcome {
        self.record(
            s,
            m,
            (
                decision,
                crate::approval::Decider::Policy,
                crate::activity::CallOutcome::NotRun,
            ),
            None,
            super::failure::text_of(result.as_bytes()),
        );
        Outcome::Reply(super::answer::ours(id.get(), &result, s.era()))
    }

    /// The policy for one call, then earlier answers: free, held for the person, or refused
    /// (a disabled tool).
    pub(super) fn admit(
        &self,
        s: &Arc<ClientSession>,
        server: &ServerHandle,
        def: &Arc<ToolDef>,
        exposed: &str,
        arguments: Option<&RawValue>,
    ) -> Admission {
        let tool = def.name.as_str();
        let verdict = self.verdict(s, server, def);
        match verdict.decision {
            Policy::Allow => return Admission::Free(Decision::Allowed),
            Policy::Disabled => return Admission::Refused(Decision::Disabled, disabled(exposed)),
            Policy::Ask => {}
        }
        let config = self.inner.hub.config();
        let broker = self.inner.hub.approvals();
        let changed = broker.check_definition(server.id().as_str(), def);
        if changed.is_none() {
            match broker.granted(
                s.profile.as_deref(),
                &s.id,
                server.id().as_str(),
                tool,
                def.hash(),
            ) {
                Some(Scope::Always) => return Admission::Free(Decision::RememberedAlways),
                Some(_) => return Admission::Free(Decision::RememberedSession),
                None => {}
            }
        }
        let meta = def.meta();
        let timeout = std::time::Duration::from_secs(config.approval.timeout_secs.max(1));
        let now = crate::logs::now_ms();
        let reason = match changed {
            Some(_) => AskReason::Changed,
            None => verdict.reason.unwrap_or_default(),
        };
        let request = ApprovalRequest {
            id: broker.next_id(),
            client: self.client_ref(s),
            server: server.id().to_string(),
            tool: tool.to_owned(),
            exposed: exposed.to_owned(),
            title: meta.title.clone(),
            description: meta.description.clone(),
            annotations: meta.annotations.clone(),
            // Approvers see the arguments with known secret values masked, never the values.
            arguments: masked_arguments(self.inner.hub.redactions(), arguments),
            requested_at: now,
            expires_at: now + timeout.as_millis() as u64,
            queued: false,
            reason,
            reason_text: reason.text().to_owned(),
            changed,
            digest: String::new(),
            hidden_characters: false,
        }
        .seal();
        Admission::Held(Box::new(Gate {
            request,
            hash: def.hash().to_owned(),
            timeout,
        }))
    }
}

impl Gateway {
    /// Who is asking, as approvers see it: the token's profile first, the name the client gives
    /// itself (and whom that name imitates, if it does), whom an "always" covers.
    fn client_ref(&self, s: &ClientSession) -> ClientRef {
        let recent = self.recent_sessions(super::CONNECTED_WITHIN);
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
            covers: self.others_on_profile(s, recent),
            imitates,
        }
    }

    /// The other clients (name and version) seen on `s`'s profile in the last 5 minutes
    /// (`recent`): who an "always" answered for this call covers too.
    fn others_on_profile(
        &self,
        s: &ClientSession,
        recent: Vec<crate::profiles::Connected>,
    ) -> Vec<String> {
        let profile = s.profile.as_deref().unwrap_or("default");
        let me = s.info();
        let mut others: Vec<String> = recent
            .into_iter()
            .filter(|c| c.profile == profile)
            .filter(|c| Some(&c.name) != me.name.as_ref() || c.version != me.version)
            .map(|c| match c.version {
                Some(v) => format!("{} {v}", c.name),
                None => c.name,
            })
            .collect();
        others.sort();
        others.dedup();
        others
    }

    /// What a call to this tool from this session does, and why it asks: the one policy
    /// ([`crate::approval::policy::evaluate`]) with the session's client profile as a layer.
    fn verdict(
        &self,
        s: &ClientSession,
        server: &ServerHandle,
        def: &ToolDef,
    ) -> crate::approval::policy::Verdict {
        let config = self.inner.hub.config();
        let profile = self.profile_config(s);
        self.inner
            .hub
            .tool_verdict(&config, server.id(), def, profile.as_ref())
    }

    /// Checks a held call again at the moment it would run, after the person allowed the
    /// definition with hash `asked`: the tool must still be listed under `exposed` by the same
    /// server, running, enabled, and defined as the person saw it.
    pub(super) fn recheck(
        &self,
        s: &Arc<ClientSession>,
        server: &ServerHandle,
        exposed: &str,
        asked: &str,
        arguments: &RawValue,
    ) -> Recheck {
        let gone = |decision| {
            Recheck::Refused(
                format!("{exposed} was disabled or removed while the call waited for approval, so it was not run."),
                decision,
            )
        };
        if !self.inner.hub.config().servers.contains_key(server.id()) {
            return gone(Decision::Disabled);
        }
        let Some(entry) = self.catalog().lookup(exposed).cloned() else {
            // Disabled tools leave the catalog; so do a stopped server's.
            return match server.status().state {
                st if st.offers_tools() => gone(Decision::Disabled),
                _ => Recheck::Refused(not_running(server, exposed), Decision::NotRunning),
            };
        };
        if &entry.server != server.id() {
            return gone(Decision::Disabled);
        }
        // An on-demand server that idled while the call waited starts again when it is sent.
        if !server.status().state.offers_tools() {
            return Recheck::Refused(not_running(server, exposed), Decision::NotRunning);
        }
        if entry.tool.hash() == asked {
            return match self.verdict(s, server, &entry.tool).decision {
                Policy::Disabled => gone(Decision::Disabled),
                _ => Recheck::Go,
            };
        }
        match self.admit(s, server, &entry.tool, exposed, Some(arguments)) {
            Admission::Free(_) => Recheck::Go,
            Admission::Held(g) => Recheck::AskAgain(g),
            Admission::Refused(d, _) => gone(d),
        }
    }
}

fn disabled(exposed: &str) -> String {
    tool_error(&format!(
        "{exposed} is disabled in Gatehouse (\"enabled\": false), so it was not run."
    ))
}

fn not_running(server: &ServerHandle, tool: &str) -> String {
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
