//! The aggregated tool catalog: every running server's tools under their exposed names, the
//! serialised `tools/list` result clients get (built once per change, not per request), and the
//! lookup from exposed name back to server and tool.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use super::names::{Names, View};
use super::session::Sessions;
use crate::config::{ClientProfile, Config, ServerId};
use crate::hub::HubHandle;
use crate::jsonrpc;
use crate::naming::exposed_name;
use crate::supervisor::status::ToolDef;
use crate::sync::lock;

/// One exposed tool: its server and its definition as the server listed it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The server's id.
    pub server: ServerId,
    /// The tool (its own name, raw definition, and what was read from it).
    pub tool: Arc<ToolDef>,
}

/// Every running server's tools under their exposed names.
#[derive(Debug, Default)]
pub struct Catalog {
    by_name: HashMap<String, Entry>,
    /// `{"tools":[…]}`, each definition as the server sent it except for its `name`.
    list_result: String,
    /// Each exposed tool's server and definition, in list order (for client profiles' lists).
    ordered: Vec<(String, ServerId, Arc<str>)>,
    fingerprint: u64,
    /// The hub's change generation this catalog was built from.
    generation: u64,
    /// Each client profile's names over this catalog, made when first asked for.
    views: super::names::Views,
    /// The tools that point at an app (`_meta.ui.resourceUri`): canonical name → (server, URI).
    ui_refs: HashMap<String, (ServerId, String)>,
}

impl Catalog {
    /// The catalog of the hub as it is now.
    pub fn build(hub: &HubHandle) -> Catalog {
        Self::build_from(hub, &hub.config())
    }

    fn build_from(hub: &HubHandle, config: &Config) -> Catalog {
        // Read first: a change during the build makes this catalog count as stale.
        let generation = hub.bus().generation();
        let mut by_name = HashMap::new();
        let mut ordered = Vec::new();
        let mut ui_refs = HashMap::new();
        for server in hub.servers() {
            if !server.state().offers_tools() {
                continue;
            }
            let policy = config.servers.get(server.id());
            for tool in server.tools().iter() {
                let hidden = policy
                    .and_then(|p| p.tools.get(&tool.name))
                    .and_then(|t| t.enabled)
                    == Some(false);
                if hidden {
                    continue;
                }
                let name = exposed_name(server.id().as_str(), &tool.name);
                if by_name.contains_key(&name) {
                    // Only a 40-bit hash collision between shortened names gets here.
                    tracing::warn!(tool = %tool.name, server = %server.id(), exposed = %name, "exposed tool name collision; tool hidden");
                    continue;
                }
                let Some(def) =
                    rename(tool.raw.get(), &name).and_then(|d| tagged(&d, server.id().as_str()))
                else {
                    continue;
                };
                // A secret the server wrote into a definition (a description quoting its
                // token) reaches no client and no model, in any of its forms.
                let keep = policy.map_or(&[][..], |p| p.unmasked_secrets.as_slice());
                let def = String::from_utf8(hub.redactions().mask_line(def.into_bytes(), keep))
                    .unwrap_or_default();
                if let Some(uri) = super::apps::resource_uri(tool.raw.get()) {
                    ui_refs.insert(name.clone(), (server.id().clone(), uri));
                }
                let def: Arc<str> = Arc::from(def);
                ordered.push((name.clone(), server.id().clone(), def));
                by_name.insert(
                    name,
                    Entry {
                        server: server.id().clone(),
                        tool: tool.clone(),
                    },
                );
            }
        }
        // A stable order whatever order servers list in (MCP 2026-07-28 asks for one: clients
        // and model prompt caches key on it): by exposed name.
        ordered.sort_by(|a, b| a.0.cmp(&b.0));
        let defs: Vec<&str> = ordered.iter().map(|(_, _, d)| &**d).collect();
        let list_result = format!("{{\"tools\":[{}]}}", defs.join(","));
        let mut h = std::collections::hash_map::DefaultHasher::new();
        list_result.hash(&mut h);
        Catalog {
            by_name,
            list_result,
            ordered,
            fingerprint: h.finish(),
            generation,
            views: Default::default(),
            ui_refs,
        }
    }

    /// The `ui://` URIs that tools of more than one server point at, among the tools client
    /// profile `profile` sees (`None`: every tool): each server's copy is shown under its alias.
    pub fn ui_shared(&self, profile: Option<&crate::config::ClientProfile>) -> HashSet<String> {
        super::apps::shared(
            self.ui_refs
                .iter()
                .filter(|(name, (server, _))| {
                    profile.is_none_or(|p| p.sees_tool(server.as_str(), name))
                })
                .map(|(_, (server, uri))| (server.as_str(), uri.clone())),
        )
    }

    /// The names client profile `key` (`default`: the gateway token) sees, with `profile` its
    /// config: made once per catalog and profile setting, from the names given before.
    pub fn view(
        &self,
        key: &str,
        profile: Option<&crate::config::ClientProfile>,
        names: &super::names::Names,
        kept: impl Fn(&str) -> bool,
    ) -> Arc<super::names::View> {
        // A profile's setting can change without the catalog changing: a view is made for one.
        self.views.get(key, profile, || {
            // A tool whose app URI another server's tool (that this profile sees) points at
            // too: shown with its server's alias (`apps.rs`).
            let shared = self.ui_shared(profile);
            let aliased: HashMap<&str, String> = self
                .ui_refs
                .iter()
                .filter(|(_, (_, uri))| shared.contains(uri))
                .filter_map(|(name, (server, uri))| {
                    let raw = self.by_name.get(name)?.tool.raw.get();
                    let aliased = super::apps::with_alias(raw, server.as_str(), uri)?;
                    Some((name.as_str(), tagged(&aliased, server.as_str())?))
                })
                .collect();
            let seen: Vec<super::names::Seen<'_>> = self
                .ordered
                .iter()
                .filter(|(name, server, _)| {
                    profile.is_none_or(|p| p.sees_tool(server.as_str(), name))
                })
                .filter_map(|(name, server, def)| {
                    let e = self.by_name.get(name)?;
                    Some(super::names::Seen {
                        canonical: name,
                        server: server.as_str(),
                        own: &e.tool.name,
                        // As listed: the server's tag in its description.
                        raw: aliased.get(name.as_str()).map_or(&**def, String::as_str),
                    })
                })
                .collect();
            let id = (key != super::names::DEFAULT_PROFILE).then_some(key);
            names.view(key, crate::naming::budget_for(id), &seen, kept)
        })
    }

    /// The tool exposed as `exposed`.
    pub fn lookup(&self, exposed: &str) -> Option<&Entry> {
        self.by_name.get(exposed)
    }

    /// `{"tools":[…]}`, built once per change.
    pub fn list_result(&self) -> &str {
        &self.list_result
    }

    /// `{"tools":[…]}` as client profile `profile` sees it.
    pub fn list_result_for(&self, profile: &crate::config::ClientProfile) -> String {
        let defs: Vec<&str> = self
            .ordered
            .iter()
            .filter(|(name, server, _)| profile.sees_tool(server.as_str(), name))
            .map(|(_, _, def)| &**def)
            .collect();
        format!("{{\"tools\":[{}]}}", defs.join(","))
    }

    /// How many tools client profile `profile` sees.
    pub fn count_for(&self, profile: &crate::config::ClientProfile) -> usize {
        self.ordered
            .iter()
            .filter(|(name, server, _)| profile.sees_tool(server.as_str(), name))
            .count()
    }

    /// The hub's change generation this catalog was built from.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// A hash of the list result: equal fingerprints, equal lists.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// How many tools are exposed.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// No tool is exposed.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// A server's tool list as its handle shares it.
type ToolList = Arc<Vec<Arc<ToolDef>>>;

/// The tools the gateway exposes, as one owned part of it: the catalog (rebuilt when a server
/// changed, each client told when what it sees changed), the names each client profile is shown,
/// and what the pins were last given of each server.
pub(super) struct Tools {
    /// Guards one swap or clone of the `Arc`.
    current: Mutex<Arc<Catalog>>,
    /// The names given to each client profile (`names.rs`), kept across restarts.
    names: Names,
    /// Each server's tool list (and origin) last given to the pins: an unchanged list is not
    /// taken again. The `Arc` is held, so a new list can never reuse its address. Guards one
    /// refresh's comparisons.
    listed: Mutex<HashMap<ServerId, (ToolList, String)>>,
}

impl Tools {
    /// The tools of `hub` as they are now, with the names kept in the hub's `names.json`.
    pub fn new(hub: &HubHandle) -> Tools {
        Tools {
            current: Mutex::new(Arc::new(Catalog::build(hub))),
            names: Names::load(Some(hub.client_names_path())),
            listed: Mutex::new(HashMap::new()),
        }
    }

    /// The current catalog, rebuilt first if any server changed since it was built (so a call
    /// right after a server starts never races the watcher).
    pub fn current(&self, hub: &HubHandle, sessions: &Sessions) -> Arc<Catalog> {
        let current = lock(&self.current).clone();
        if current.generation() == hub.bus().generation() {
            return current;
        }
        self.refresh(hub, sessions);
        lock(&self.current).clone()
    }

    /// Rebuilds the catalog; if the exposed tools changed, sends `list_changed` to every client
    /// whose view changed.
    pub fn refresh(&self, hub: &HubHandle, sessions: &Sessions) {
        let new = Arc::new(Catalog::build(hub));
        self.pin_listings(hub);
        let (changed, old) = {
            let mut cur = lock(&self.current);
            let changed = cur.fingerprint() != new.fingerprint();
            let old = std::mem::replace(&mut *cur, new.clone());
            (changed, old)
        };
        if !changed {
            return;
        }
        // Each client hears of a change to what it sees: a profile's list is compared before
        // and after (once per profile), the gateway token's is the whole list.
        let line = jsonrpc::notification_line("notifications/tools/list_changed", None);
        let config = hub.config();
        let mut seen: HashMap<String, bool> = HashMap::new();
        sessions.notify_where(&line, |s| match &s.profile {
            None => true,
            Some(p) => *seen.entry(p.clone()).or_insert_with(|| {
                let profile = config
                    .clients
                    .iter()
                    .find(|(k, _)| k.as_str() == p)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                // Names are given for good, so a profile's named list changes exactly when the
                // tools it sees do.
                old.list_result_for(&profile) != new.list_result_for(&profile)
            }),
        });
    }

    /// First sight of a definition is what later changes are compared with; only a running
    /// server's list is its whole list (a stopped one lists nothing, which prunes nothing).
    fn pin_listings(&self, hub: &HubHandle) {
        let config = hub.config();
        for server in hub.servers() {
            let Some(cfg) = config.servers.get(server.id()) else {
                continue;
            };
            if server.status().state.offers_tools() {
                let tools = server.tools();
                let origin = cfg.origin();
                let mut listed = lock(&self.listed);
                let same = listed
                    .get(server.id())
                    .is_some_and(|(t, o)| Arc::ptr_eq(t, &tools) && *o == origin);
                if !same {
                    hub.approvals()
                        .take_listing(server.id().as_str(), &origin, &tools);
                    if let Some(text) = server.instructions() {
                        pin_instructions(hub, server.id().as_str(), &text);
                    }
                    listed.insert(server.id().clone(), (tools, origin));
                }
            }
        }
        lock(&self.listed).retain(|id, _| config.servers.contains_key(id));
    }

    /// The names client profile `profile` (`None`: the gateway token's) sees in `catalog`,
    /// with `setting` its config.
    pub fn view(
        &self,
        hub: &HubHandle,
        catalog: &Catalog,
        profile: Option<&str>,
        setting: Option<&ClientProfile>,
    ) -> Arc<View> {
        // A name stays reserved for a tool whose server is configured but not running now.
        let kept = |server: &str| {
            hub.server(server)
                .is_ok_and(|h| !h.status().state.offers_tools())
        };
        catalog.view(
            profile.unwrap_or(super::names::DEFAULT_PROFILE),
            setting,
            &self.names,
            kept,
        )
    }
}

/// Replaces the `name` of a raw JSON object, keeping every other member's bytes.
pub fn rename(raw_object: &str, name: &str) -> Option<String> {
    crate::jsonrpc::set_member(raw_object, "name", &crate::jsonrpc::json_string(name))
}

/// A tool's definition as a client sees it, its description starting with the server's tag
/// (`[wiki] Searches pages`): the model can tell which server a tool comes from, whatever its
/// name. The definition the pins hash is the server's own, untouched.
pub fn tagged(def: &str, server: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Described {
        description: Option<String>,
    }
    let tag = format!("[{server}]");
    let described = match serde_json::from_str::<Described>(def).ok()?.description {
        Some(d) if d.starts_with(&tag) => return Some(def.to_owned()),
        Some(d) if !d.is_empty() => format!("{tag} {d}"),
        _ => tag,
    };
    crate::jsonrpc::set_member(def, "description", &crate::jsonrpc::json_string(&described))
}

/// A server's `instructions` held to their pin (they never reach a client: Gatehouse answers
/// `initialize` with its own): a change is held for the person to see, with an activity row.
fn pin_instructions(hub: &HubHandle, server: &str, text: &str) {
    let content = crate::jsonrpc::json_string(text);
    let said = crate::approval::Said {
        kind: crate::approval::PinKind::Instructions,
        server,
        name: "",
        arguments: None,
        content: &content,
    };
    if let (_, Some(change)) = hub.approvals().said(&said) {
        let row = crate::activity::CallRecord::change_held(&change, "", None);
        hub.activity().record(row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's tag opens the description (once), and only the description changes.
    #[test]
    fn a_description_says_its_server() {
        let out = tagged(
            r#"{"name":"search","description":"Finds pages","f":0.1}"#,
            "wiki",
        )
        .unwrap();
        assert!(
            out.contains(r#""description":"[wiki] Finds pages""#),
            "{out}"
        );
        assert!(out.contains(r#""f":0.1"#), "{out}");
        assert_eq!(tagged(&out, "wiki").unwrap(), out);
        let bare = tagged(r#"{"name":"x"}"#, "t").unwrap();
        assert!(bare.contains(r#""description":"[t]""#), "{bare}");
    }

    #[test]
    fn rename_keeps_other_members_byte_exact() {
        let raw = r#"{"name":"x","inputSchema":{"type":"object","default":12345678901234567890},"execution":{"taskSupport":"optional"},"f":0.123456789}"#;
        let out = rename(raw, "srv__x").unwrap();
        assert!(out.contains(r#""name":"srv__x""#));
        assert!(out.contains(r#""inputSchema":{"type":"object","default":12345678901234567890}"#));
        assert!(out.contains(r#""execution":{"taskSupport":"optional"}"#));
        assert!(out.contains(r#""f":0.123456789"#));
    }
}
