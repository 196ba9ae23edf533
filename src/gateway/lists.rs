//! Prompts, resources and completions: lists fanned out to every running server that declared
//! the capability (items raw, prompts renamed `server__prompt`), and the requests that must find
//! the server owning a prompt or a resource URI.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::catalog::rename;
use super::context::Cx;
use super::forward::forward_members;
use super::outcome::{member_params, Outcome};
use super::said::Check;
use super::session::lock;
use super::subs::Upstreams;
use crate::config::ServerId;
use crate::jsonrpc::{self, ErrorCode};
use crate::naming::{exposed_name, split_server};
use crate::supervisor::{Reply, ServerHandle};

/// How long a combined list waits for each server.
pub const LIST_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// What the last lists said about who owns what.
#[derive(Default)]
pub(super) struct Lists {
    /// Exposed prompt name → (server, prompt), refreshed by every `prompts/list`. Guards one
    /// swap or lookup.
    prompts: Mutex<HashMap<String, (ServerId, String)>>,
    /// Resource URI → owning server, refreshed by every `resources/list`. On a URI listed by
    /// several servers, the first server in id order owns it. Guards one swap or lookup.
    resources: Mutex<HashMap<String, ServerId>>,
}

/// `{"<key>":[…]}` of the items from servers the session's profile sees.
fn visible_list(cx: &Cx, key: &str, items: &[(Box<RawValue>, ServerId)]) -> String {
    let joined: Vec<&str> = items
        .iter()
        .filter(|(_, id)| cx.sees(id))
        .map(|(i, _)| i.get())
        .collect();
    format!("{{\"{key}\":[{}]}}", joined.join(","))
}

impl Lists {
    /// `prompts/list`: every running server's prompts, each under its own name where no other
    /// server has one of that name, else `server__prompt`; who owns which is kept for
    /// `prompts/get`.
    pub(super) async fn prompts_list(&self, cx: &Cx) -> String {
        let (_, items) = fan_out_list(&cx.hub, "prompts/list", "prompts", "prompts").await;
        #[derive(Deserialize)]
        struct N {
            name: String,
        }
        // Each held to its pin: a changed definition is the pinned one, or left out (`said.rs`).
        let parsed: Vec<(Box<RawValue>, ServerId, String)> = items
            .into_iter()
            .filter_map(|(item, server)| {
                let n = serde_json::from_str::<N>(item.get()).ok()?;
                let item = super::said::prompt_listed(cx, server.as_str(), &n.name, item)?;
                Some((item, server, n.name))
            })
            .collect();
        // A prompt keeps its own name when no other server has one of that name (people pick
        // prompts by name; they are never a model's tool names), else `server__prompt`.
        let mut count: HashMap<&str, usize> = HashMap::new();
        for (_, _, own) in &parsed {
            *count.entry(own.as_str()).or_default() += 1;
        }
        let canonical: Vec<String> = parsed
            .iter()
            .map(|(_, server, own)| exposed_name(server.as_str(), own))
            .collect();
        let mut names = HashMap::new();
        let mut out = Vec::new();
        for ((item, server, own), canonical) in parsed.iter().zip(&canonical) {
            let unique = count.get(own.as_str()) == Some(&1)
                && crate::naming::own_fits(own, crate::naming::MAX_NAME)
                && !names.contains_key(own.as_str());
            let shown = if unique {
                own.clone()
            } else {
                canonical.clone()
            };
            if let Some(renamed) = rename(item.get(), &shown) {
                if cx.sees(server) {
                    out.push(renamed);
                }
                names.insert(canonical.clone(), (server.clone(), own.clone()));
                names.insert(shown, (server.clone(), own.clone()));
            }
        }
        *lock(&self.prompts) = names;
        format!("{{\"prompts\":[{}]}}", out.join(","))
    }

    /// `prompts/get`: forwarded to the server owning the prompt, under its own name.
    pub(super) async fn prompts_get(
        &self,
        cx: &Cx,
        id: &RawValue,
        params: Option<&RawValue>,
    ) -> Outcome {
        let (mut p, name) = match member_params(id, params, "prompts/get", "name") {
            Ok(x) => x,
            Err(reply) => return reply,
        };
        let unknown = || {
            Outcome::error(
                id.get(),
                ErrorCode::InvalidParams,
                &format!("Unknown prompt: {name}"),
            )
        };
        let Some((server, prompt)) = self.find_prompt(cx, &name).await else {
            return unknown();
        };
        if !cx.sees(&server) {
            return unknown();
        }
        let Ok(server) = cx.hub.server(server.as_str()) else {
            return unknown();
        };
        let Ok(original) = RawValue::from_string(jsonrpc::json_string(&prompt)) else {
            return Outcome::error(id.get(), ErrorCode::InvalidParams, "Invalid prompt name");
        };
        p.insert("name".into(), original);
        let check = Check::prompt(&prompt, p.get("arguments").map(|a| &**a));
        forward_members(cx, id, server, "prompts/get", p, Some(check))
    }

    /// The prompt `exposed` names; prompts are listed first when no listing of this run knows
    /// it (a client may get a prompt by its own name without having listed).
    async fn find_prompt(&self, cx: &Cx, exposed: &str) -> Option<(ServerId, String)> {
        if let Some(hit) = self.resolve_prompt(exposed) {
            return Some(hit);
        }
        self.prompts_list(cx).await;
        self.resolve_prompt(exposed)
    }

    fn resolve_prompt(&self, exposed: &str) -> Option<(ServerId, String)> {
        if let Some(hit) = lock(&self.prompts).get(exposed).cloned() {
            return Some(hit);
        }
        // Not listed yet in this run: plain names split at the first "__".
        let (server, prompt) = split_server(exposed)?;
        let id = ServerId::parse(server).ok()?;
        (exposed_name(server, prompt) == exposed).then(|| (id, prompt.to_owned()))
    }

    /// `resources/list`: every running server's resources (an app's URI that tools of several
    /// servers point at under each server's alias); who owns which is kept for the requests.
    pub(super) async fn resources_list(&self, cx: &Cx) -> String {
        let (_, items) = fan_out_list(&cx.hub, "resources/list", "resources", "resources").await;
        // An app's `ui://` URI that tools of several servers point at: each copy under its
        // server's alias (`apps.rs`).
        let shared = cx.catalog().ui_shared(cx.profile().as_ref());
        let mut owners = HashMap::new();
        let mut shown = Vec::with_capacity(items.len());
        for (item, server) in items {
            #[derive(Deserialize)]
            struct U {
                uri: String,
            }
            let Ok(u) = serde_json::from_str::<U>(item.get()) else {
                shown.push((item, server));
                continue;
            };
            if shared.contains(&u.uri) {
                let alias = super::apps::alias(server.as_str(), &u.uri);
                let renamed = jsonrpc::set_member(item.get(), "uri", &jsonrpc::json_string(&alias))
                    .and_then(|t| RawValue::from_string(t).ok());
                if let Some(renamed) = renamed {
                    owners.insert(alias, server.clone());
                    shown.push((renamed, server));
                }
                continue;
            }
            owners.entry(u.uri).or_insert(server.clone());
            shown.push((item, server));
        }
        let result = visible_list(cx, "resources", &shown);
        *lock(&self.resources) = owners;
        result
    }

    /// `resources/templates/list`: every running server's templates.
    pub(super) async fn resource_templates_list(&self, cx: &Cx) -> String {
        let (_, items) = fan_out_list(
            &cx.hub,
            "resources/templates/list",
            "resourceTemplates",
            "resources",
        )
        .await;
        visible_list(cx, "resourceTemplates", &items)
    }

    /// `resources/read`, `resources/subscribe` and `resources/unsubscribe`: forwarded to the
    /// server owning the URI; a subscription counted in `subs`, its server asked once.
    pub(super) async fn resource_request(
        &self,
        cx: &Cx,
        subs: &Arc<Upstreams>,
        id: &RawValue,
        method: &'static str,
        params: Option<&RawValue>,
    ) -> Outcome {
        let (mut p, mut uri) = match member_params(id, params, method, "uri") {
            Ok(x) => x,
            Err(reply) => return reply,
        };
        let s = &cx.session;
        // A result Gatehouse cut to its budget: read whole by the profile it was cut for.
        if method == "resources/read" && uri.starts_with(super::budget::URI_PREFIX) {
            let profile = s
                .profile
                .as_deref()
                .unwrap_or(crate::profiles::DEFAULT_PROFILE);
            return match cx.calls.results.read(profile, &uri) {
                Some(r) => Outcome::Reply(super::answer::ours(
                    id.get(),
                    &super::budget::contents(&uri, &r),
                    s.era(),
                )),
                None => Outcome::error(
                    id.get(),
                    ErrorCode::ResourceNotFound,
                    &format!("Resource not found: {uri} (a cut result is kept for 15 minutes, for the client it was cut for)"),
                ),
            };
        }
        // One server's copy of a shared app URI: that server, under the original URI.
        let shared = cx.catalog().ui_shared(cx.profile().as_ref());
        let aliased = super::apps::resolve(&uri, &shared)
            .and_then(|(server, original)| Some((cx.hub.server(server).ok()?, original)));
        let owner = match aliased {
            Some((server, original)) => {
                let Ok(raw) = RawValue::from_string(jsonrpc::json_string(&original)) else {
                    return Outcome::error(
                        id.get(),
                        ErrorCode::InvalidParams,
                        "Invalid resource URI",
                    );
                };
                p.insert("uri".into(), raw);
                uri = original;
                Some(server)
            }
            None => self.resource_owner(cx, &uri).await,
        };
        let Some(server) = owner.filter(|o| cx.sees(o.id())) else {
            return Outcome::error(
                id.get(),
                ErrorCode::ResourceNotFound,
                &format!("Resource not found: {uri}"),
            );
        };
        // What a legacy client subscribes to, it hears of when the server says it changed. The
        // server is asked once however many clients subscribe, and told when the last goes.
        let done = || Outcome::Reply(super::answer::ours(id.get(), "{}", s.era()));
        if method == "resources/unsubscribe" {
            s.unsubscribe(&uri);
            return done();
        }
        if method == "resources/subscribe" {
            let (already, room) = s.subscribed(&uri);
            if already {
                return done();
            }
            if !room {
                return Outcome::error(
                    id.get(),
                    ErrorCode::InvalidParams,
                    &format!(
                        "this client is subscribed to {} resources already (the limit)",
                        super::session::MAX_SUBSCRIPTIONS
                    ),
                );
            }
            if let Ok(peer) = server.peer() {
                let (held, ask) = subs.hold(server.id().as_str(), &uri, &peer);
                s.subscribe(&uri, Some(held));
                if !ask {
                    return done();
                }
            } else {
                s.subscribe(&uri, None);
            }
        }
        let check = match method {
            "resources/read" => Check::resource(&uri),
            _ => None,
        };
        forward_members(cx, id, server, method, p, check)
    }

    /// Asks each legacy server that owns one of `uris` to tell of its changes
    /// (`resources/subscribe`), all within [`LIST_DEADLINE`] (finding the owners included): a
    /// modern client's listen stream subscribed to them. A modern server is not asked (its
    /// revision has no such request); what is not done in time is left out.
    pub(super) async fn subscribe_upstream(
        &self,
        cx: &Cx,
        subs: &Arc<Upstreams>,
        uris: &[String],
    ) -> Vec<super::subs::Held> {
        let mut held = Vec::new();
        let owners = self.subscribe_owners(cx, subs, uris, &mut held);
        let _ = tokio::time::timeout(LIST_DEADLINE, owners).await;
        held
    }

    async fn subscribe_owners(
        &self,
        cx: &Cx,
        subs: &Arc<Upstreams>,
        uris: &[String],
        held: &mut Vec<super::subs::Held>,
    ) {
        let mut asks = Vec::new();
        for uri in uris {
            let Some(server) = self
                .resource_owner(cx, uri)
                .await
                .filter(|o| cx.sees(o.id()))
            else {
                continue;
            };
            let Ok(peer) = server.peer() else { continue };
            if peer.era() == crate::protocol::Era::Modern {
                continue;
            }
            // Asked once for all the clients that subscribe (`subs.rs`).
            let (share, ask) = subs.hold(server.id().as_str(), uri, &peer);
            held.push(share);
            if !ask {
                continue;
            }
            let Ok(params) =
                RawValue::from_string(format!("{{\"uri\":{}}}", jsonrpc::json_string(uri)))
            else {
                continue;
            };
            asks.push(async move {
                let _ = peer.request("resources/subscribe", Some(&params)).await;
            });
        }
        futures_util::future::join_all(asks).await;
    }

    /// The server owning `uri`: the one that listed it, else the one with a matching template.
    async fn resource_owner(&self, cx: &Cx, uri: &str) -> Option<ServerHandle> {
        let listed = lock(&self.resources).get(uri).cloned();
        let listed = match listed {
            Some(s) => Some(s),
            None => {
                self.resources_list(cx).await;
                lock(&self.resources).get(uri).cloned()
            }
        };
        if let Some(id) = listed {
            return cx.hub.server(id.as_str()).ok();
        }
        let (_, owners) = fan_out_list(
            &cx.hub,
            "resources/templates/list",
            "resourceTemplates",
            "resources",
        )
        .await;
        owners
            .into_iter()
            .find(|(item, _)| {
                #[derive(Deserialize)]
                struct T {
                    #[serde(rename = "uriTemplate")]
                    uri_template: String,
                }
                serde_json::from_str::<T>(item.get()).ok().is_some_and(|t| {
                    let prefix = t.uri_template.split('{').next().unwrap_or("");
                    !prefix.is_empty() && uri.starts_with(prefix)
                })
            })
            .and_then(|(_, id)| cx.hub.server(id.as_str()).ok())
    }

    /// `completion/complete`: forwarded to the server owning the prompt or resource it refers
    /// to; none owning it, an empty completion.
    pub(super) async fn complete(
        &self,
        cx: &Cx,
        id: &RawValue,
        params: Option<&RawValue>,
    ) -> Outcome {
        #[derive(Deserialize)]
        struct P {
            #[serde(rename = "ref")]
            reference: R,
        }
        #[derive(Deserialize)]
        struct R {
            #[serde(rename = "type")]
            kind: String,
            name: Option<String>,
            uri: Option<String>,
        }
        let invalid = |msg: &str| Outcome::error(id.get(), ErrorCode::InvalidParams, msg);
        let needs_ref = "Invalid params: completion/complete needs \"ref\"";
        let Some(raw) = params else {
            return invalid(needs_ref);
        };
        let Ok(parsed) = serde_json::from_str::<P>(raw.get()) else {
            return invalid(needs_ref);
        };
        let Ok(mut p) = serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(raw.get()) else {
            return invalid("Invalid params");
        };
        let server = match (
            parsed.reference.kind.as_str(),
            parsed.reference.name,
            parsed.reference.uri,
        ) {
            ("ref/prompt", Some(name), _) => {
                let Some((server, prompt)) = self
                    .find_prompt(cx, &name)
                    .await
                    .filter(|(server, _)| cx.sees(server))
                else {
                    return invalid(&format!("Unknown prompt: {name}"));
                };
                let new_ref = serde_json::json!({"type": "ref/prompt", "name": prompt}).to_string();
                if let Ok(r) = RawValue::from_string(new_ref) {
                    p.insert("ref".into(), r);
                }
                cx.hub.server(server.as_str()).ok()
            }
            ("ref/resource", _, Some(uri)) => self
                .resource_owner(cx, &uri)
                .await
                .filter(|o| cx.sees(o.id())),
            _ => None,
        };
        match server {
            Some(server) => forward_members(cx, id, server, "completion/complete", p, None),
            None => Outcome::Reply(super::answer::ours(
                id.get(),
                r#"{"completion":{"values":[],"hasMore":false}}"#,
                cx.session.era(),
            )),
        }
    }
}

/// Asks every running server that declared `capability` for all pages of `method` and
/// returns `{"<key>":[…]}` plus each item (raw) with its server, in server id order.
async fn fan_out_list(
    hub: &crate::hub::HubHandle,
    method: &str,
    key: &str,
    capability: &str,
) -> (String, Vec<(Box<RawValue>, ServerId)>) {
    let servers: Vec<ServerHandle> = hub
        .servers()
        .into_iter()
        .filter(|s| s.state() == crate::supervisor::State::Running && s.has_capability(capability))
        .collect();
    let mut set = tokio::task::JoinSet::new();
    for (i, server) in servers.into_iter().enumerate() {
        let method = method.to_owned();
        let key = key.to_owned();
        set.spawn(async move {
            // A server that does not answer in time is left out of this list (never holds it
            // up for every client) and told about in its log and status.
            let warning = format!("slow:{method}");
            let items =
                match tokio::time::timeout(LIST_DEADLINE, list_all(&server, &method, &key)).await {
                    Ok(items) => {
                        server.warn(&warning, None);
                        items
                    }
                    Err(_) => {
                        server.warn(
                            &warning,
                            Some(format!(
                            "did not answer {method} within {} s; left out of the combined list",
                            LIST_DEADLINE.as_secs()
                        )),
                        );
                        Vec::new()
                    }
                };
            (i, server.id().clone(), items)
        });
    }
    let mut results = Vec::new();
    while let Some(Ok(r)) = set.join_next().await {
        results.push(r);
    }
    results.sort_by_key(|(i, _, _)| *i);
    let mut items = Vec::new();
    for (_, id, list) in results {
        items.extend(list.into_iter().map(|item| (item, id.clone())));
    }
    let joined: Vec<&str> = items.iter().map(|(i, _)| i.get()).collect();
    (format!("{{\"{key}\":[{}]}}", joined.join(",")), items)
}

/// All pages of a list method from one server; the items raw.
async fn list_all(server: &ServerHandle, method: &str, key: &str) -> Vec<Box<RawValue>> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let params = cursor.as_ref().and_then(|c| {
            RawValue::from_string(format!("{{\"cursor\":{}}}", jsonrpc::json_string(c))).ok()
        });
        let Ok(Reply::Result(r)) = server.request(method, params.as_deref()).await else {
            break;
        };
        let Ok(mut page) = serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(r.get()) else {
            break;
        };
        if let Some(list) = page.remove(key) {
            if let Ok(v) = serde_json::from_str::<Vec<Box<RawValue>>>(list.get()) {
                items.extend(v);
            }
        }
        match page
            .remove("nextCursor")
            .and_then(|c| serde_json::from_str::<String>(c.get()).ok())
        {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => break,
        }
    }
    items
}
