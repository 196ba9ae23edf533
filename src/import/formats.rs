//! Client formats that do not spell a server the common way (`command`/`args`/`env`/`url`),
//! turned into it before an entry is read: opencode's `mcp` (`type: local` with the command as
//! one array, `environment`), Zed's `context_servers` (`command` as a string or as
//! `{path, args, env}`), Goose's `extensions` (`cmd`, `envs`, `uri`). Servers a client provides
//! itself (Zed extensions, Goose built-ins) are not servers Gatehouse can run: left out.

use serde_json::{json, Map, Value};

/// The keys a client file lists its servers under, with the client they belong to.
pub const SERVER_KEYS: &[(&str, &str)] = &[
    ("mcpServers", "Claude Desktop, Claude Code, Cursor, Gemini CLI, Windsurf, Cline, Roo Code, Copilot CLI, LM Studio"),
    ("servers", "VS Code"),
    ("mcp_servers", "Codex"),
    ("context_servers", "Zed"),
    ("mcp", "opencode"),
    ("extensions", "Goose"),
];

/// `v`, a server listed under `key`, in the common spelling; `None` when the client runs it
/// itself.
pub fn common(key: &str, v: &Value) -> Option<Value> {
    let o = v.as_object()?;
    let mut out = Map::new();
    let copy = |out: &mut Map<String, Value>, from: &str, to: &str| {
        if let Some(x) = o.get(from) {
            out.insert(to.to_owned(), x.clone());
        }
    };
    match key {
        "mcp" => {
            if let Some(cmd) = o.get("command").and_then(Value::as_array) {
                if let Some((first, rest)) = cmd.split_first() {
                    out.insert("command".into(), first.clone());
                    out.insert("args".into(), Value::Array(rest.to_vec()));
                }
            }
            copy(&mut out, "url", "url");
            copy(&mut out, "headers", "headers");
            copy(&mut out, "environment", "env");
        }
        "context_servers" => match o.get("command") {
            Some(Value::Object(c)) => {
                for k in ["args", "env"] {
                    if let Some(x) = c.get(k) {
                        out.insert(k.into(), x.clone());
                    }
                }
                out.insert(
                    "command".into(),
                    c.get("path").cloned().unwrap_or(Value::Null),
                );
            }
            _ => {
                for k in ["command", "args", "env", "url", "headers"] {
                    copy(&mut out, k, k);
                }
            }
        },
        "extensions" => {
            let kind = o.get("type").and_then(Value::as_str).unwrap_or("stdio");
            if !matches!(kind, "stdio" | "sse" | "streamable_http") {
                return None;
            }
            copy(&mut out, "cmd", "command");
            copy(&mut out, "args", "args");
            copy(&mut out, "envs", "env");
            copy(&mut out, "uri", "url");
            copy(&mut out, "headers", "headers");
        }
        _ => return Some(v.clone()),
    }
    if !out.contains_key("command") && !out.contains_key("url") {
        return None;
    }
    if o.get("enabled").and_then(Value::as_bool) == Some(false) {
        out.insert("disabled".into(), json!(true));
    }
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each unusual spelling comes out common; what the client runs itself is left out.
    #[test]
    fn every_clients_spelling_becomes_the_common_one() {
        let oc = common("mcp", &json!({"type": "local", "command": ["npx", "-y", "pkg"], "environment": {"K": "{env:K}"}, "enabled": false})).unwrap();
        assert_eq!(
            oc,
            json!({"command": "npx", "args": ["-y", "pkg"], "env": {"K": "{env:K}"}, "disabled": true})
        );
        let remote = common(
            "mcp",
            &json!({"type": "remote", "url": "https://x/mcp", "headers": {"A": "b"}}),
        )
        .unwrap();
        assert_eq!(
            remote,
            json!({"url": "https://x/mcp", "headers": {"A": "b"}})
        );
        let zed_old = common(
            "context_servers",
            &json!({"command": {"path": "node", "args": ["s.js"], "env": {}}}),
        )
        .unwrap();
        assert_eq!(
            zed_old,
            json!({"command": "node", "args": ["s.js"], "env": {}})
        );
        let zed_new = common(
            "context_servers",
            &json!({"command": "uvx", "args": ["srv"]}),
        )
        .unwrap();
        assert_eq!(zed_new, json!({"command": "uvx", "args": ["srv"]}));
        assert_eq!(
            common(
                "context_servers",
                &json!({"source": "extension", "settings": {}})
            ),
            None
        );
        let goose = common("extensions", &json!({"type": "stdio", "cmd": "uvx", "args": ["srv"], "envs": {"K": "v"}, "enabled": true, "name": "srv"})).unwrap();
        assert_eq!(
            goose,
            json!({"command": "uvx", "args": ["srv"], "env": {"K": "v"}})
        );
        let goose_http = common(
            "extensions",
            &json!({"type": "streamable_http", "uri": "https://x/mcp"}),
        )
        .unwrap();
        assert_eq!(goose_http, json!({"url": "https://x/mcp"}));
        assert_eq!(
            common(
                "extensions",
                &json!({"type": "builtin", "name": "developer"})
            ),
            None
        );
    }
}
