//! Codex keeps its MCP servers in TOML (`~/.codex/config.toml`, or `$CODEX_HOME/config.toml`):
//! `[mcp_servers.NAME]` tables with `command`/`args`/`env`/`cwd` or `url` with
//! `bearer_token_env_var`, `http_headers`, `env_http_headers`. Read into the JSON shape the other
//! clients use; written back with a format-preserving editor (`toml_edit`), so every other table,
//! key and comment stays as the person left it.

use std::path::PathBuf;

use serde_json::{json, Map, Value};

/// Codex's config file.
pub fn config_path() -> Option<PathBuf> {
    match std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
        Some(home) => Some(PathBuf::from(home).join("config.toml")),
        None => dirs::home_dir().map(|h| h.join(".codex").join("config.toml")),
    }
}

/// The TOML text as JSON, its servers in the shape the other clients write (`mcpServers`):
/// a bearer token Codex reads from a variable becomes a secret Gatehouse asks for
/// (`Bearer ${input:VAR}`), a header from a variable an env reference, `enabled = false`
/// `disabled`.
pub fn read(text: &str) -> Result<Value, String> {
    let root: Value = toml::from_str(text)
        .map_err(|e| format!("not valid TOML ({})", at(text, e.span(), e.message())))?;
    let mut servers = Map::new();
    for (name, s) in root
        .get("mcp_servers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let Some(o) = s.as_object() else {
            servers.insert(name.clone(), s.clone());
            continue;
        };
        let mut e = o.clone();
        let mut headers: Map<String, Value> = o
            .get("http_headers")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (header, var) in o
            .get("env_http_headers")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if let Some(var) = var.as_str() {
                headers.insert(header.clone(), json!(format!("${{{var}}}")));
            }
        }
        if let Some(var) = o.get("bearer_token_env_var").and_then(Value::as_str) {
            headers.insert(
                "Authorization".into(),
                json!(format!("Bearer ${{input:{var}}}")),
            );
        }
        if !headers.is_empty() {
            e.insert("headers".into(), Value::Object(headers));
        }
        if o.get("enabled").and_then(Value::as_bool) == Some(false) {
            e.insert("disabled".into(), json!(true));
        }
        servers.insert(name.clone(), Value::Object(e));
    }
    let mut out = root.as_object().cloned().unwrap_or_default();
    out.insert("mcp_servers".into(), Value::Object(servers));
    Ok(Value::Object(out))
}

/// `text` with `[mcp_servers.gatehouse]` set to `entry` (a stdio entry: command, args) and the
/// `managed` servers removed; everything else — other tables, keys, comments — kept. Returns the
/// new text and the names removed.
pub fn write(
    text: &str,
    name: &str,
    entry: &Value,
    managed: &[String],
) -> Result<(String, Vec<String>), String> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        format!(
            "not valid TOML ({}); fix it first — nothing was written",
            at(text, e.span(), e.message())
        )
    })?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_mut()
        .ok_or("mcp_servers is not a table; nothing was written")?;
    let mut removed = Vec::new();
    let names: Vec<String> = servers.iter().map(|(k, _)| k.to_owned()).collect();
    for n in names {
        if n != name && managed.contains(&crate::naming::normalise_id(&n)) {
            servers.remove(&n);
            removed.push(n);
        }
    }
    let mut table = toml_edit::Table::new();
    for (k, v) in entry.as_object().into_iter().flatten() {
        if let Some(item) = item_of(v) {
            table.insert(k, item);
        }
    }
    servers.insert(name, toml_edit::Item::Table(table));
    Ok((doc.to_string(), removed))
}

/// Where a TOML error is and what it says — never the text around it (the file may hold a
/// token on that very line).
fn at(text: &str, span: Option<std::ops::Range<usize>>, message: &str) -> String {
    let message = message.trim();
    let Some(start) = span.map(|s| s.start.min(text.len())) else {
        return message.to_owned();
    };
    let before = text.get(..start).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}: {message}")
}

/// A JSON value of an entry (strings, booleans, numbers, arrays, objects) as TOML.
fn item_of(v: &Value) -> Option<toml_edit::Item> {
    Some(toml_edit::value(value_of(v)?))
}

fn value_of(v: &Value) -> Option<toml_edit::Value> {
    Some(match v {
        Value::String(s) => s.as_str().into(),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => n.as_i64()?.into(),
        Value::Array(a) => {
            let mut arr = toml_edit::Array::new();
            for x in a {
                arr.push(value_of(x)?);
            }
            arr.into()
        }
        Value::Object(o) => {
            let mut t = toml_edit::InlineTable::new();
            for (k, x) in o {
                t.insert(k, value_of(x)?);
            }
            t.into()
        }
        Value::Null => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"# my settings
model = "o3"

[mcp_servers.fx]
command = "npx"
args = ["-y", "server-x"] # pinned

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "EX_TOKEN"
env_http_headers = { "X-Region" = "REGION" }

[mcp_servers.off]
command = "x"
enabled = false

[profiles.fast]
model = "o4-mini"
"#;

    #[test]
    fn codex_servers_read_in_the_shape_of_the_others() {
        let v = read(CONFIG).unwrap();
        let s = &v["mcp_servers"];
        assert_eq!(s["fx"]["args"], json!(["-y", "server-x"]));
        assert_eq!(
            s["remote"]["headers"]["Authorization"],
            "Bearer ${input:EX_TOKEN}"
        );
        assert_eq!(s["remote"]["headers"]["X-Region"], "${REGION}");
        assert_eq!(s["off"]["disabled"], true);
        assert!(read("[mcp_servers\n")
            .unwrap_err()
            .contains("not valid TOML"));
        // The error says where, never what: the line may hold a token.
        let e = read("[mcp_servers.r]\nhttp_headers = { Authorization = \"Bearer sk-live-123\" \n")
            .unwrap_err();
        assert!(!e.contains("sk-live-123") && e.contains("line 2"), "{e}");
        let e = write("x = \"sk-live-456\" y", "gatehouse", &json!({}), &[]).unwrap_err();
        assert!(!e.contains("sk-live-456") && e.contains("line 1"), "{e}");
    }

    #[test]
    fn writing_keeps_every_other_table_key_and_comment() {
        let entry = json!({"command": "/opt/gatehouse", "args": ["connect", "--client", "codex"]});
        let (text, removed) = write(CONFIG, "gatehouse", &entry, &["fx".to_owned()]).unwrap();
        assert_eq!(removed, ["fx"]);
        for kept in [
            "# my settings",
            "model = \"o3\"",
            "[mcp_servers.remote]",
            "bearer_token_env_var = \"EX_TOKEN\"",
            "[profiles.fast]",
        ] {
            assert!(text.contains(kept), "{kept} lost:\n{text}");
        }
        assert!(!text.contains("server-x"), "{text}");
        let v = read(&text).unwrap();
        assert_eq!(
            v["mcp_servers"]["gatehouse"]["args"],
            json!(["connect", "--client", "codex"])
        );
        // Written again: the same text (no duplicate table, nothing moved).
        let (again, _) = write(&text, "gatehouse", &entry, &[]).unwrap();
        assert_eq!(again, text);
        assert!(write("x = [", "gatehouse", &entry, &[]).is_err());
    }
}
