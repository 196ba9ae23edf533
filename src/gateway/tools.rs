//! `tools/call`: the exposed name is looked up in the catalog, the call is admitted (free, held
//! for the person, or refused) and then forwarded with the server's own tool name.

use std::sync::Arc;

use serde_json::value::RawValue;

use super::admission::{admit, disabled, not_running, Admission};
use super::answer::tool_error;
use super::audit::CallMeta;
use super::forward::{Pass, ToolCall};
use super::names::Resolved;
use super::session::ClientSession;
use super::{member_params, Gateway, Outcome};
use crate::activity::Decision;
use crate::approval::policy::Decision as Policy;
use crate::jsonrpc::{self, ErrorCode};
use crate::naming::{exposed_name, split_server};
use crate::supervisor::ServerHandle;

mod validate;

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

    // An exception to the 100-line limit: a `tools/call` from lookup to forward is one chain of
    // refusals in the order a client meets them (unknown, starting, stopped, invalid, over its
    // limit, admission); each is a few lines, and the chain is the behaviour.
    #[allow(clippy::too_many_lines)]
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
                .filter(|h| h.state() == crate::supervisor::State::Starting);
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
            server.state(),
            crate::supervisor::State::Idle | crate::supervisor::State::Starting
        );
        if waits && !started {
            return self.start_then_call(s, id, params, server);
        }
        let mut meta = CallMeta::new(&server, &entry.tool.name, arguments);
        if server.state() != crate::supervisor::State::Running {
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
        let admitted = admit(
            self,
            s,
            &server,
            &entry.tool,
            &name,
            p.get("arguments").map(|a| &**a),
        );
        meta.rule = admitted.rule.map(|r| r.name);
        let pass = match admitted.admission {
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
            if server.state() != crate::supervisor::State::Running {
                // A stopped server lists no tools: the name after `__` is the best we know.
                let tool = split_server(name).map_or(name, |(_, t)| t);
                let meta = CallMeta::new(&server, tool, arguments);
                let text = tool_error(&not_running(&server, name));
                return self.refuse(s, id, &meta, Decision::NotRunning, text);
            }
            // A tool hidden by `enabled: false` is refused with a reason, not "unknown".
            if let Some(def) = def {
                let (v, _) = super::admission::verdict(self, s, &server, &def, None);
                if v.decision == Policy::Disabled {
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
}
