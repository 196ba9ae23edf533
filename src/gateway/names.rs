//! The names each client profile sees. A tool is shown under the server's own name when that is
//! unique among the tools the profile sees and fits the budget of the client the profile serves
//! (`naming::budget_for`); otherwise as `server__tool`, shortened with a hash past the budget.
//! A name once given stays with its tool while the tool exists — across restarts (kept in
//! `DATA/names.json`) and list changes, even when another server later lists a tool of the same
//! name (that one gets `server__tool`). Underneath, everything (grants, pins, per-tool keys, the
//! activity log) knows a tool by its canonical `server__tool`; a call by that name, or by a
//! server's own name unique in the profile (an MCP App calling its own tool), still routes — but
//! only while it names the tool it named when the client listed it: a name whose tool's server
//! is stopped, or was removed, is refused with the reason, never routed to another server's tool
//! of the same name.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::config::ClientProfile;
use crate::naming;
use crate::sync::lock;

/// The key of the gateway token's own profile (no configured profile may be named so).
pub const DEFAULT_PROFILE: &str = "default";

/// At most this many names are kept per profile (the listing bound, `MAX_TOOLS`).
const MAX_KEPT: usize = 10_000;

/// One tool the profile sees: its canonical name, server, own name and raw definition.
pub struct Seen<'a> {
    /// `server__tool`.
    pub canonical: &'a str,
    /// The server's id.
    pub server: &'a str,
    /// The server's own name for it.
    pub own: &'a str,
    /// Its definition as the server listed it.
    pub raw: &'a str,
}

/// One profile's names over one catalog.
#[derive(Debug, Default)]
pub struct View {
    /// `{"tools":[…]}` under this profile's names, in name order.
    pub list_result: String,
    to_canonical: HashMap<String, String>,
    to_shown: HashMap<String, String>,
    by_own: HashMap<String, Vec<String>>,
    /// Names given to tools that are not here now — their server is stopped (the name is kept
    /// for it) or was removed (the name is retired) — with their canonical names.
    gone: HashMap<String, String>,
    /// The same by the server's own name of each such tool.
    gone_by_own: HashMap<String, Vec<String>>,
    /// Every shown name with its canonical one, in name order.
    pub shown: Vec<(String, String)>,
}

/// How a name a client sent resolves in its profile.
#[derive(Debug, PartialEq)]
pub enum Resolved {
    /// The canonical name of the one tool it means.
    One(String),
    /// A server's own name several tools of the profile share (or shared when it was listed):
    /// the names to use instead.
    Ambiguous(Vec<String>),
    /// A name given to a tool that is not here now (its server stopped or was removed): its
    /// canonical name. The call is refused with the reason, never routed elsewhere.
    Gone(String),
    /// Nothing of that name.
    Unknown,
}

impl View {
    /// The tool `name` means for this profile: a shown name, a canonical one, or a server's own
    /// name that only one of its tools has.
    pub fn resolve(&self, name: &str) -> Resolved {
        if let Some(c) = self.to_canonical.get(name) {
            return Resolved::One(c.clone());
        }
        if self.to_shown.contains_key(name) {
            return Resolved::One(name.to_owned());
        }
        if let Some(c) = self.gone.get(name) {
            return Resolved::Gone(c.clone());
        }
        let here = self.by_own.get(name).map_or(&[][..], Vec::as_slice);
        let gone = self.gone_by_own.get(name).map_or(&[][..], Vec::as_slice);
        match (here, gone) {
            ([], []) => Resolved::Unknown,
            ([one], []) => Resolved::One(one.clone()),
            ([], [first, ..]) => Resolved::Gone(first.clone()),
            _ => {
                let mut names: Vec<String> = here
                    .iter()
                    .filter_map(|c| self.to_shown.get(c).cloned())
                    .chain(gone.iter().map(|c| format!("{c} (not here now)")))
                    .collect();
                names.sort();
                Resolved::Ambiguous(names)
            }
        }
    }

    /// The name this profile sees a canonical name under.
    pub fn shown_as(&self, canonical: &str) -> Option<&str> {
        self.to_shown.get(canonical).map(String::as_str)
    }
}

/// The names given so far, per profile (`default` for the gateway token), kept on disk.
#[derive(Default)]
pub struct Names {
    path: Option<PathBuf>,
    given: Mutex<BTreeMap<String, BTreeMap<String, String>>>,
    /// Per profile, names whose tool's server was removed (or stopped listing it): name →
    /// canonical. A call by such a name is refused with the reason, and the name is not given
    /// to another tool, until the hub restarts. At most `MAX_KEPT` per profile.
    retired: Mutex<BTreeMap<String, BTreeMap<String, String>>>,
    /// Saves are numbered; the file holds the newest one written (saves run off the caller).
    saved: Arc<Mutex<u64>>,
    next: std::sync::atomic::AtomicU64,
}

impl Names {
    /// The names kept at `path` (none when it is missing or unreadable: names start afresh).
    pub fn load(path: Option<PathBuf>) -> Names {
        let given = path
            .as_ref()
            .and_then(|p| crate::client_file::read(p).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        Names {
            path,
            given: Mutex::new(given),
            ..Names::default()
        }
    }

    /// The view of `profile` over `seen` (the tools it sees), with `budget` characters per
    /// name. `kept` says whether a name given earlier to a tool not seen now is kept for it (its
    /// server is configured but not running).
    pub fn view(
        &self,
        profile: &str,
        budget: usize,
        seen: &[Seen<'_>],
        kept: impl Fn(&str) -> bool,
    ) -> View {
        let mut given = lock(&self.given);
        let mut all_retired = lock(&self.retired);
        let retired = all_retired.entry(profile.to_owned()).or_default();
        let before = given.get(profile).cloned().unwrap_or_default();
        let canonicals: std::collections::HashSet<&str> =
            seen.iter().map(|s| s.canonical).collect();
        // Names given before: kept for tools seen now, and reserved for tools of servers that
        // are only stopped; the others are retired (still refused by name, never given again
        // while the hub runs).
        let mut taken: HashMap<String, String> = HashMap::new();
        let mut assigned: BTreeMap<String, String> = BTreeMap::new();
        for (canonical, name) in &before {
            let fits = name.len() <= budget && naming::is_valid(name);
            let server = canonical.split_once("__").map_or("", |(s, _)| s);
            let keep = fits && (canonicals.contains(canonical.as_str()) || kept(server));
            if keep && !taken.contains_key(name) {
                taken.insert(name.clone(), canonical.clone());
                assigned.insert(canonical.clone(), name.clone());
            } else if !canonicals.contains(canonical.as_str()) && retired.len() < MAX_KEPT {
                retired.insert(name.clone(), canonical.clone());
            }
        }
        // A retired name now held again (its tool came back) is no longer retired.
        retired.retain(|name, canonical| {
            !taken.contains_key(name) && !canonicals.contains(canonical.as_str())
        });

        let mut own_count: HashMap<&str, usize> = HashMap::new();
        for s in seen {
            *own_count.entry(s.own).or_default() += 1;
        }
        let mut fresh: Vec<&Seen<'_>> = seen
            .iter()
            .filter(|s| !assigned.contains_key(s.canonical))
            .collect();
        fresh.sort_by_key(|s| s.canonical);
        for s in fresh {
            let own_ok = own_count.get(s.own) == Some(&1)
                && naming::own_fits(s.own, budget)
                // An own name equal to another tool's canonical name would shadow it.
                && (!canonicals.contains(s.own) || s.own == s.canonical);
            let mut candidates = Vec::new();
            if own_ok {
                candidates.push(s.own.to_owned());
            }
            candidates.push(naming::fitted(s.server, s.own, budget));
            // A retired name is free only for the tool it was given to.
            let free = |c: &String| {
                !taken.contains_key(c) && retired.get(c).is_none_or(|r| r == s.canonical)
            };
            let Some(name) = candidates.into_iter().find(free) else {
                // Only a 40-bit hash collision gets here: the tool is left out, never misrouted.
                tracing::warn!(profile, tool = %s.canonical, "no free name for a tool; hidden");
                continue;
            };
            taken.insert(name.clone(), s.canonical.to_owned());
            assigned.insert(s.canonical.to_owned(), name);
        }
        retired.retain(|name, _| !taken.contains_key(name));
        if assigned.len() > MAX_KEPT {
            assigned.retain(|c, _| canonicals.contains(c.as_str()));
        }
        if assigned != before {
            given.insert(profile.to_owned(), assigned.clone());
            self.save(&given);
        }
        drop(given);
        // Names for tools not here now: kept ones (a stopped server's) and retired ones.
        let gone: HashMap<String, String> = assigned
            .iter()
            .filter(|(c, _)| !canonicals.contains(c.as_str()))
            .map(|(c, n)| (n.clone(), c.clone()))
            .chain(retired.iter().map(|(n, c)| (n.clone(), c.clone())))
            .collect();
        drop(all_retired);
        let mut view = build(seen, &assigned);
        for canonical in gone.values() {
            if let Some((_, own)) = canonical.split_once("__") {
                view.gone_by_own
                    .entry(own.to_owned())
                    .or_default()
                    .push(canonical.clone());
            }
        }
        view.gone = gone;
        view
    }

    fn save(&self, given: &BTreeMap<String, BTreeMap<String, String>>) {
        let Some(path) = self.path.clone() else {
            return;
        };
        let Ok(text) = serde_json::to_string_pretty(given) else {
            return;
        };
        let seq = 1 + self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let saved = self.saved.clone();
        let write = move || {
            let mut last = lock(&saved);
            if seq <= *last {
                return; // a newer state is already on disk
            }
            match crate::config::write_atomic(&path, text.as_bytes()) {
                Ok(()) => *last = seq,
                Err(e) => tracing::warn!(
                    "cannot keep the names given to clients in {}: {e}",
                    path.display()
                ),
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(write)),
            Err(_) => write(),
        }
    }
}

fn build(seen: &[Seen<'_>], assigned: &BTreeMap<String, String>) -> View {
    let mut rows: Vec<(&str, &Seen<'_>)> = seen
        .iter()
        .filter_map(|s| assigned.get(s.canonical).map(|n| (n.as_str(), s)))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(b.0));
    let mut defs = Vec::with_capacity(rows.len());
    let mut view = View::default();
    for (name, s) in &rows {
        let Some(def) =
            crate::jsonrpc::set_member(s.raw, "name", &crate::jsonrpc::json_string(name))
        else {
            continue;
        };
        defs.push(def);
        view.to_canonical
            .insert((*name).to_owned(), s.canonical.to_owned());
        view.to_shown
            .insert(s.canonical.to_owned(), (*name).to_owned());
        view.by_own
            .entry(s.own.to_owned())
            .or_default()
            .push(s.canonical.to_owned());
        view.shown
            .push(((*name).to_owned(), s.canonical.to_owned()));
    }
    view.list_result = format!("{{\"tools\":[{}]}}", defs.join(","));
    view
}

/// A cache of views, one per profile, for one catalog: each made for the profile's setting it
/// was asked with (a setting can change without the catalog changing).
#[derive(Debug, Default)]
pub struct Views(Mutex<HashMap<String, MadeFor>>);

/// A view, and the profile setting it was made for.
type MadeFor = (Option<ClientProfile>, Arc<View>);

impl Views {
    /// The view of `profile` with `setting`, made by `make` the first time it is asked for (and
    /// again when the setting is another): looked up without a copy or a key of its own.
    pub fn get(
        &self,
        profile: &str,
        setting: Option<&ClientProfile>,
        make: impl FnOnce() -> View,
    ) -> Arc<View> {
        if let Some((made_for, v)) = lock(&self.0).get(profile) {
            if made_for.as_ref() == setting {
                return v.clone();
            }
        }
        let v = Arc::new(make());
        lock(&self.0).insert(profile.to_owned(), (setting.cloned(), v.clone()));
        v
    }
}

#[cfg(test)]
#[path = "names_tests.rs"]
mod tests;
