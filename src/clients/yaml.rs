//! Goose's YAML config: read into a value; an entry written through a round trip that keeps
//! every other key and value — refused, naming the fix, when the file has comments a round trip
//! would lose.

use serde_json::Value;

/// The file's text as a value.
pub fn read(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_norway::from_str::<Value>(text).map_err(|e| match e.location() {
        Some(l) => format!("not valid YAML at line {}, column {}", l.line(), l.column()),
        None => "not valid YAML".to_owned(),
    })
}

/// `text` with `entry` set as `name` under `key`, every other server whose normalised name is
/// in `managed` removed.
pub fn write(
    text: &str,
    key: &str,
    name: &str,
    entry: &Value,
    managed: &[String],
) -> Result<(String, Vec<String>), String> {
    if text.lines().any(|l| l.trim_start().starts_with('#')) {
        return Err("the file has comments a rewrite would lose; nothing was written — add the entry with the client's own settings (the snippet `client-config` prints)".into());
    }
    let mut root = read(text)?;
    let obj = root
        .as_object_mut()
        .ok_or("expected a mapping at the top; nothing was written")?;
    let servers = obj
        .entry(key)
        .or_insert_with(|| Value::Object(Default::default()))
        .as_object_mut()
        .ok_or_else(|| format!("\"{key}\" is not a mapping; nothing was written"))?;
    let mut removed = Vec::new();
    servers.retain(|n, _| {
        let drop = n != name && managed.contains(&crate::naming::normalise_id(n));
        if drop {
            removed.push(n.clone());
        }
        !drop
    });
    servers.insert(name.to_owned(), entry.clone());
    let out = serde_norway::to_string(&root).map_err(|e| e.to_string())?;
    Ok((out, removed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Goose's other settings and extensions survive; a file with comments is left alone.
    #[test]
    fn goose_settings_survive_and_comments_are_never_dropped() {
        let text = "GOOSE_PROVIDER: openai\nextensions:\n  developer:\n    type: builtin\n    enabled: true\n";
        let entry =
            json!({"name": "gatehouse", "type": "stdio", "cmd": "gatehouse", "args": ["connect"]});
        let (out, _) = write(text, "extensions", "gatehouse", &entry, &[]).unwrap();
        let v = read(&out).unwrap();
        assert_eq!(v["GOOSE_PROVIDER"], "openai");
        assert_eq!(v["extensions"]["developer"]["type"], "builtin");
        assert_eq!(v["extensions"]["gatehouse"], entry);
        assert!(write(
            "# mine\nextensions: {}\n",
            "extensions",
            "gatehouse",
            &entry,
            &[]
        )
        .is_err());
    }
}
