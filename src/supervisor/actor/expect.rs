//! What the config expects of a server's listed tools — per-tool policy keys and `tools_used`
//! names that name no listed tool — as warnings in its status and log.

use super::Actor;
use crate::supervisor::shared::lock;

impl Actor {
    /// What the config expects of the listed tools: every per-tool policy key and every
    /// `tools_used` name must be a tool the server lists. A key that names none (a typo, a tool
    /// the server renamed) would leave the tool meant on the default policy without a word: it
    /// is a warning in the server's status and log, with the nearest listed name.
    pub(super) fn check_expectations(&self) {
        let tools = lock(&self.shared.tools).clone();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let hint = |key: &str| match crate::config::closest(key, &names) {
            Some(best) => format!(" (did you mean \"{best}\"?)"),
            None => String::new(),
        };
        let stray: Vec<String> = self
            .cfg
            .tools
            .keys()
            .filter(|k| !names.contains(&k.as_str()))
            .map(|k| format!("\"{k}\"{}", hint(k)))
            .collect();
        let policy = (!stray.is_empty()).then(|| {
            format!(
                "the config's \"tools\" settings for {} name no tool this server lists, so they apply to nothing; fix the name{}",
                stray.join(", "),
                if stray.len() == 1 { "" } else { "s" }
            )
        });
        self.warn("policy-keys", policy);
        let missing: Vec<String> = self
            .cfg
            .tools_used
            .iter()
            .filter(|k| !names.contains(&k.as_str()))
            .map(|k| format!("\"{k}\"{}", hint(k)))
            .collect();
        let used = (!missing.is_empty()).then(|| {
            format!(
                "\"tools_used\" expects {} but the server does not list {}",
                missing.join(", "),
                if missing.len() == 1 { "it" } else { "them" }
            )
        });
        self.warn("tools-used", used);
        self.warn("rules", stale_rules(&self.cfg, &tools));
    }

    /// Sets or clears a warning; a new one is noted in the server's log too.
    pub(super) fn warn(&self, key: &str, text: Option<String>) {
        let new = text.as_ref().is_some_and(|t| {
            lock(&self.shared.warnings).get(key).map(String::as_str) != Some(t.as_str())
        });
        if let (true, Some(t)) = (new, &text) {
            self.shared
                .log(&self.ctx.bus, crate::logs::LogStream::Gatehouse, t.clone());
        }
        self.shared.warn(key, text);
    }
}

/// The entry's rules that can no longer match its tools as listed now (an argument renamed or
/// removed by the server, a type changed): the calls they were written for are asked about
/// instead (a deny) or follow the default (an allow) — said in the server's status, never
/// silent.
fn stale_rules(
    cfg: &crate::config::ServerConfig,
    tools: &[std::sync::Arc<crate::tool::ToolDef>],
) -> Option<String> {
    let mut lines = Vec::new();
    for (name, policy) in cfg.tools.iter().filter(|(_, p)| !p.rules.is_empty()) {
        let Some(def) = tools.iter().find(|t| &t.name == name) else {
            continue;
        };
        let Ok(definition) = serde_json::from_str::<serde_json::Value>(def.raw.get()) else {
            continue;
        };
        for p in crate::approval::rules::check(name, &policy.rules, &definition) {
            if !p.refuse {
                continue;
            }
            let effect = policy.rules.get(p.rule).map(|r| r.effect);
            let then = if effect == Some(crate::config::rules::Effect::Deny) {
                "its calls are asked about instead"
            } else {
                "it allows nothing"
            };
            lines.push(format!(
                "tools.{}.{} ({then}): {}",
                crate::text::reveal(name),
                p.text,
                p.fix
            ));
        }
    }
    (!lines.is_empty()).then(|| {
        format!(
            "a rule no longer fits the tool as the server lists it now: {}",
            lines.join("; ")
        )
    })
}
