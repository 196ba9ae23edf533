//! Goose's YAML config: read into a value; an entry written by a targeted edit of the servers'
//! mapping (`extensions:`) — the one child Gatehouse manages replaced or added, managed ones
//! removed, and every other byte of the file (comments, key order, quoting, anchors, values
//! such as `ver: 1.10` or `0o17`) left exactly as it was. The result is read back and compared:
//! an edit that would change anything else is refused, naming the fix, and nothing is written.

use serde_json::Value;

/// The file's text as a value. A tagged value (`!custom …`) reads as the value it tags (the tag
/// itself stays in the file, as every byte Gatehouse does not edit); a file of several
/// documents (`---` between them) is refused, naming them: Goose reads a file of one.
pub fn read(text: &str) -> Result<Value, String> {
    use serde::Deserialize;
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    let at = |e: &serde_norway::Error| match e.location() {
        Some(l) => format!("not valid YAML at line {}, column {}", l.line(), l.column()),
        None => format!("not valid YAML ({e})"),
    };
    let mut docs = Vec::new();
    for doc in serde_norway::Deserializer::from_str(text) {
        docs.push(serde_norway::Value::deserialize(doc).map_err(|e| at(&e))?);
        if docs.len() > 1 {
            return Err(
                "it holds more than one YAML document (`---` between them), and Goose reads a file of one; keep one document"
                    .into(),
            );
        }
    }
    Ok(docs.pop().map_or(Value::Null, plain))
}

/// A YAML value as JSON: tags dropped (the tagged value kept), keys as text.
fn plain(v: serde_norway::Value) -> Value {
    use serde_norway::Value as Y;
    match v {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => serde_json::to_value(&n).unwrap_or(Value::Null),
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(plain).collect()),
        Y::Mapping(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    let key = match plain(k) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, plain(v))
                })
                .collect(),
        ),
        Y::Tagged(t) => plain(t.value),
    }
}

/// A line's indentation (spaces), or `None` for a blank or comment-only line.
fn indent(line: &str) -> Option<usize> {
    let body = line.trim_start_matches(' ');
    if body.trim().is_empty() || body.starts_with('#') {
        None
    } else {
        Some(line.len() - body.len())
    }
}

/// The key a mapping line starts (`name:` or `"name":`), unquoted.
fn key_of(line: &str) -> Option<String> {
    let body = line.trim_start();
    let (key, rest) = if let Some(q) = body.strip_prefix('"') {
        let end = q.find('"')?;
        (q[..end].to_owned(), &q[end + 1..])
    } else if let Some(q) = body.strip_prefix('\'') {
        let end = q.find('\'')?;
        (q[..end].to_owned(), &q[end + 1..])
    } else {
        let end = body.find(':')?;
        (body[..end].trim_end().to_owned(), &body[end..])
    };
    let rest = rest.trim_start();
    (rest.starts_with(':')
        && (rest.len() == 1
            || rest[1..].starts_with([' ', '\t'])
            || rest[1..].starts_with('#')
            || rest[1..].trim().is_empty()))
    .then_some(key)
}

/// `entry` as YAML lines under a child key, indented by `pad` spaces.
fn block(name: &str, entry: &Value, pad: usize) -> Result<String, String> {
    let body = serde_norway::to_string(entry).map_err(|e| e.to_string())?;
    let sp = " ".repeat(pad);
    let mut out = format!("{sp}{name}:\n");
    for l in body.lines() {
        out.push_str(&format!("{sp}  {l}\n"));
    }
    Ok(out)
}

/// `text` with `entry` set as `name` under `key`, every other server whose normalised name is
/// in `managed` removed; everything else byte for byte.
pub fn write(
    text: &str,
    key: &str,
    name: &str,
    entry: &Value,
    managed: &[String],
) -> Result<(String, Vec<String>), String> {
    let before = read(text)?;
    if !before.is_object() {
        return Err("expected a mapping at the top; nothing was written".into());
    }
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    if lines.last().is_some_and(|l| !l.ends_with('\n')) {
        if let Some(l) = lines.last_mut() {
            l.push('\n');
        }
    }
    let top = lines
        .iter()
        .position(|l| indent(l) == Some(0) && key_of(l).as_deref() == Some(key));
    let mut removed = Vec::new();
    match top {
        None => {
            lines.push(format!("{key}:\n"));
            lines.push(block(name, entry, 2)?);
        }
        Some(at) => {
            let after_colon = lines[at].split_once(':').map_or("", |(_, r)| r).trim();
            let inline = after_colon.split('#').next().unwrap_or("").trim();
            if inline == "{}" {
                lines[at] = format!("{key}:\n");
            } else if !inline.is_empty() {
                return Err(format!("\"{key}\" is written inline ({inline}): Gatehouse edits it only as a block; nothing was written — add the entry with the client's own settings (the snippet `client-config` prints)"));
            }
            // The block: the lines after it more indented than it (comments and blanks inside).
            let mut end = at + 1;
            let mut last = at;
            while end < lines.len() {
                match indent(&lines[end]) {
                    Some(0) => break,
                    Some(_) => last = end,
                    None => {}
                }
                end += 1;
            }
            let end = last + 1;
            let child = (at + 1..end).find_map(|i| indent(&lines[i])).unwrap_or(2);
            // Each child: its key line to the line before the next child or the block's end.
            let starts: Vec<usize> = (at + 1..end)
                .filter(|i| indent(&lines[*i]) == Some(child) && key_of(&lines[*i]).is_some())
                .collect();
            let mut spans: Vec<(usize, usize, String)> = Vec::new();
            for (n, s) in starts.iter().enumerate() {
                let stop = starts.get(n + 1).copied().unwrap_or(end);
                // Trailing comments and blanks belong to what follows.
                let mut e = stop;
                while e > *s + 1 && indent(&lines[e - 1]).is_none() {
                    e -= 1;
                }
                spans.push((*s, e, key_of(&lines[*s]).unwrap_or_default()));
            }
            let ours = spans.iter().find(|(_, _, k)| k == name).map(|(s, _, _)| *s);
            let mut insert_at = ours.unwrap_or(end);
            for (s, e, k) in spans.iter().rev() {
                let drop = k == name || managed.contains(&crate::naming::normalise_id(k));
                if drop {
                    if k != name {
                        removed.push(k.clone());
                    }
                    lines.drain(*s..*e);
                    if *s < insert_at {
                        insert_at -= (*e - *s).min(insert_at - *s);
                    }
                }
            }
            removed.reverse();
            lines.insert(insert_at, block(name, entry, child)?);
        }
    }
    let out = lines.concat();
    // Read back: ours in place, the removed gone, everything else as it was.
    let after = read(&out)
        .map_err(|e| format!("the edit would break the file ({e}); nothing was written"))?;
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut(key).and_then(Value::as_object_mut) {
            m.retain(|k, _| k != name && !managed.contains(&crate::naming::normalise_id(k)));
        }
        if v.get(key)
            .is_some_and(|m| m.as_object().is_some_and(serde_json::Map::is_empty))
        {
            if let Some(m) = v.as_object_mut() {
                m.remove(key);
            }
        }
        v
    };
    if after.get(key).and_then(|m| m.get(name)) != Some(entry) || strip(&after) != strip(&before) {
        return Err("Gatehouse could not edit the file in place without changing something else; nothing was written — add the entry with the client's own settings (the snippet `client-config` prints)".into());
    }
    Ok((out, removed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Goose's other settings, comments, key order, quoting and values survive byte for byte;
    /// only the managed entry differs; a managed server is removed.
    #[test]
    fn goose_settings_and_comments_survive_byte_for_byte() {
        let text = "# my Goose\nGOOSE_PROVIDER: openai   # the provider\nver: 1.10\nmode: 0o17\nbase: &b\n  timeout: 300\nextensions:\n  # the developer tools\n  developer:\n    type: builtin\n    <<: *b\n    enabled: true\n  \"old-fs\":\n    type: stdio\n    cmd: npx\n\n  memory:\n    type: stdio\n    cmd: mcp-memory   # mine\ntail: 'quoted'\n";
        let entry =
            json!({"name": "gatehouse", "type": "stdio", "cmd": "gatehouse", "args": ["connect"]});
        let (out, removed) =
            write(text, "extensions", "gatehouse", &entry, &["old-fs".into()]).unwrap();
        assert_eq!(removed, ["old-fs"]);
        for kept in [
            "# my Goose\nGOOSE_PROVIDER: openai   # the provider\nver: 1.10\nmode: 0o17\nbase: &b\n",
            "  # the developer tools\n  developer:\n    type: builtin\n    <<: *b\n    enabled: true\n",
            "  memory:\n    type: stdio\n    cmd: mcp-memory   # mine\n",
            "tail: 'quoted'\n",
        ] {
            assert!(out.contains(kept), "lost {kept:?}:\n{out}");
        }
        assert!(!out.contains("old-fs"), "{out}");
        let v = read(&out).unwrap();
        assert_eq!(v["extensions"]["gatehouse"], entry);
        // Written again: the same bytes.
        let (again, _) = write(&out, "extensions", "gatehouse", &entry, &[]).unwrap();
        assert_eq!(again, out);
        // No extensions yet, or `extensions: {}`.
        let (out, _) = write("GOOSE_MODEL: x\n", "extensions", "gatehouse", &entry, &[]).unwrap();
        assert!(
            out.starts_with("GOOSE_MODEL: x\nextensions:\n  gatehouse:\n"),
            "{out}"
        );
        let (out, _) = write("extensions: {}\n", "extensions", "gatehouse", &entry, &[]).unwrap();
        assert_eq!(read(&out).unwrap()["extensions"]["gatehouse"], entry);
        assert!(write(
            "extensions: {a: 1}\n",
            "extensions",
            "gatehouse",
            &entry,
            &[]
        )
        .is_err());
    }

    /// A tagged value (`!custom`) is read as the value it tags and kept byte for byte; a file of
    /// several documents is refused, naming them.
    #[test]
    fn a_tag_is_kept_and_several_documents_are_named() {
        let text =
            "GOOSE_PROVIDER: !custom openai\nextensions:\n  dev: !builtin\n    type: builtin\n";
        let entry = json!({"name": "gatehouse", "type": "stdio", "cmd": "gatehouse"});
        let (out, _) = write(text, "extensions", "gatehouse", &entry, &[]).unwrap();
        assert!(
            out.starts_with(
                "GOOSE_PROVIDER: !custom openai\nextensions:\n  dev: !builtin\n    type: builtin\n"
            ),
            "{out}"
        );
        assert_eq!(read(&out).unwrap()["extensions"]["gatehouse"], entry);
        let why = write("a: 1\n---\nb: 2\n", "extensions", "gatehouse", &entry, &[]).unwrap_err();
        assert!(why.contains("more than one YAML document"), "{why}");
    }
}
