//! Client files in JSON as people write them — comments and trailing commas allowed (VS Code,
//! Zed) — read into a value, and edited in place: one entry set, managed ones removed, every
//! other key, comment and blank line kept (`jsonc-parser`'s concrete syntax tree).

use jsonc_parser::cst::{CstInputValue, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::Value;

/// The file's text as JSON: strict JSON first, then JSON with comments and trailing commas.
pub fn read(text: &str) -> Result<Value, String> {
    read_at(text).map_err(|(line, column, what)| {
        format!("not valid JSON at line {line}, column {column} ({what})")
    })
}

/// [`read`], its error as (line, column, what is wrong) — strict JSON's position, which is where
/// a reader of the file looks. Parsed once by `jsonc-parser` (JSON is JSONC); strict JSON is
/// asked only to say where a broken file breaks.
pub fn read_at(text: &str) -> Result<Value, (usize, usize, String)> {
    match jsonc_parser::parse_to_serde_value::<Value>(text, &ParseOptions::default()) {
        Ok(v) => Ok(v),
        Err(loose) => Err(match serde_json::from_str::<Value>(text) {
            Err(strict) => {
                let what = strict.to_string();
                let what = what
                    .split(" at line ")
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                (strict.line(), strict.column(), what)
            }
            Ok(_) => (1, 1, loose.to_string()),
        }),
    }
}

fn input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => {
            CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

/// `text` with `entry` set as `name` under `key` (made when missing) and every other server
/// whose normalised name is in `managed` removed; returns the new text and what was removed.
pub fn write(
    text: &str,
    key: &str,
    name: &str,
    entry: &Value,
    managed: &[String],
) -> Result<(String, Vec<String>), String> {
    let text = if text.trim().is_empty() { "{}\n" } else { text };
    // Checked with the same reader as `read`, so a file it cannot edit is refused whole.
    let value = read(text).map_err(|e| format!("{e}; nothing was written"))?;
    let servers_ok = match value.get(key) {
        None => value.is_object(),
        Some(v) => v.is_object(),
    };
    if !value.is_object() {
        return Err("expected a JSON object at the top; nothing was written".into());
    }
    if !servers_ok {
        return Err(format!("\"{key}\" is not an object; nothing was written"));
    }
    let root = CstRootNode::parse(text, &ParseOptions::default())
        .map_err(|e| format!("not valid JSON ({e}); nothing was written"))?;
    let servers = root.object_value_or_set().object_value_or_set(key);
    let mut removed = Vec::new();
    for prop in servers.properties() {
        let Some(n) = prop.name().and_then(|n| n.decoded_value().ok()) else {
            continue;
        };
        if n != name && managed.contains(&crate::naming::normalise_id(&n)) {
            removed.push(n);
            prop.remove();
        }
    }
    match servers.get(name) {
        Some(p) => p.set_value(input(entry)),
        None => {
            servers.append(name, input(entry));
        }
    }
    let mut out = root.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok((out, removed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An edit keeps every comment, other key and other server; it is the same written twice;
    /// a managed server is removed; a file it cannot read is refused, not overwritten.
    #[test]
    fn an_edit_keeps_comments_and_everything_else() {
        let text = "{\n  // my theme\n  \"theme\": \"dark\",\n  \"context_servers\": {\n    \"notes\": {\"command\": \"notes-mcp\"}, // mine\n    \"fs\": {\"command\": \"x\"},\n  },\n}\n";
        let entry = json!({"command": "gatehouse", "args": ["connect"]});
        let (once, removed) =
            write(text, "context_servers", "gatehouse", &entry, &["fs".into()]).unwrap();
        assert_eq!(removed, ["fs"]);
        for kept in ["// my theme", "\"theme\": \"dark\"", "\"notes\"", "// mine"] {
            assert!(once.contains(kept), "{kept} lost:\n{once}");
        }
        let v = read(&once).unwrap();
        assert_eq!(v["context_servers"]["gatehouse"], entry);
        assert!(v["context_servers"].get("fs").is_none());
        let (twice, _) = write(&once, "context_servers", "gatehouse", &entry, &[]).unwrap();
        assert_eq!(once, twice);
        assert_eq!(
            read(&write("", "mcpServers", "gatehouse", &entry, &[]).unwrap().0).unwrap(),
            json!({"mcpServers": {"gatehouse": entry}})
        );
        assert!(write("[1]", "mcpServers", "gatehouse", &entry, &[]).is_err());
        assert!(write(
            "{\"mcpServers\": 3}",
            "mcpServers",
            "gatehouse",
            &entry,
            &[]
        )
        .is_err());
        assert!(write("{oops", "mcpServers", "gatehouse", &entry, &[]).is_err());
    }
}
