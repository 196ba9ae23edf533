//! Claude Code's managed settings, which an administrator (or a package) puts beside the
//! system's and which outrank the person's: `managed-mcp.json` (when present, the only servers
//! Claude Code runs) and `managed-settings.json`'s `deniedMcpServers`, `allowedMcpServers` and
//! `allowManagedMcpServersOnly`. Read before Gatehouse writes its entry into Claude Code's
//! files, so that an entry Claude Code would never load is said, not written.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Where Claude Code looks for its managed settings on Linux (`GATEHOUSE_CLAUDE_MANAGED_DIR`
/// names another, for a test or a relocated install).
pub fn managed_dir() -> PathBuf {
    std::env::var_os("GATEHOUSE_CLAUDE_MANAGED_DIR")
        .map_or_else(|| PathBuf::from("/etc/claude-code"), PathBuf::from)
}

/// Why Claude Code's managed settings in `dir` would keep an entry named `name` reaching `url`
/// from loading, if they would.
pub fn blocks(dir: &Path, name: &str, url: Option<&str>) -> Option<String> {
    let read = |file: &str| -> Option<Value> {
        let text = crate::client_file::read(&dir.join(file)).ok()?;
        super::jsonc::read(&text).ok()
    };
    let matches = |rule: &Value| {
        rule.get("serverName").and_then(Value::as_str) == Some(name)
            || url.is_some_and(|u| {
                rule.get("serverUrl")
                    .and_then(Value::as_str)
                    .is_some_and(|pattern| url_matches(pattern, u))
            })
    };
    if let Some(mcp) = read("managed-mcp.json") {
        let listed = mcp.get("mcpServers").and_then(|s| s.get(name)).is_some();
        if !listed {
            return Some(format!(
                "{} is present: Claude Code runs only the servers it lists, and it does not list \"{name}\"; ask whoever manages this machine to add Gatehouse there",
                dir.join("managed-mcp.json").display()
            ));
        }
    }
    let settings = read("managed-settings.json")?;
    let file = dir.join("managed-settings.json");
    let list = |k: &str| settings.get(k).and_then(Value::as_array);
    if list("deniedMcpServers").is_some_and(|d| d.iter().any(matches)) {
        return Some(format!(
            "{} denies it (deniedMcpServers names \"{name}\" or its address); a denial there outranks every other setting",
            file.display()
        ));
    }
    let only = settings.get("allowManagedMcpServersOnly") == Some(&Value::Bool(true));
    match list("allowedMcpServers") {
        Some(allowed) if !allowed.iter().any(matches) => Some(format!(
            "{} allows only the servers in allowedMcpServers, and \"{name}\" is not among them; ask whoever manages this machine to add {{\"serverName\": \"{name}\"}}",
            file.display()
        )),
        None if only => Some(format!(
            "{} sets allowManagedMcpServersOnly with no allowedMcpServers: Claude Code loads no server of yours",
            file.display()
        )),
        _ => None,
    }
}

/// Whether `url` matches a `serverUrl` pattern, where `*` stands for any run of characters.
fn url_matches(pattern: &str, url: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = parts.split_first().unwrap_or((&"", &[]));
    let Some(mut left) = url.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return left.is_empty();
    };
    for p in middle {
        match left.find(p) {
            Some(i) => left = &left[i + p.len()..],
            None => return false,
        }
    }
    left.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each managed setting that keeps Gatehouse's entry from loading is named; none, nothing.
    #[test]
    fn managed_settings_that_block_the_entry_are_named() {
        let d = tempfile::tempdir().unwrap();
        let url = "http://127.0.0.1:7723/mcp";
        assert_eq!(blocks(d.path(), "gatehouse", Some(url)), None);
        let set = |v: Value| {
            std::fs::write(d.path().join("managed-settings.json"), v.to_string()).unwrap()
        };
        set(serde_json::json!({"deniedMcpServers": [{"serverName": "gatehouse"}]}));
        let why = blocks(d.path(), "gatehouse", Some(url)).unwrap();
        assert!(why.contains("deniedMcpServers"), "{why}");
        set(serde_json::json!({"allowedMcpServers": [{"serverName": "github"}]}));
        assert!(blocks(d.path(), "gatehouse", Some(url))
            .unwrap()
            .contains("allowedMcpServers"));
        set(serde_json::json!({"allowedMcpServers": [{"serverUrl": "http://127.0.0.1:*/mcp"}]}));
        assert_eq!(blocks(d.path(), "gatehouse", Some(url)), None);
        set(serde_json::json!({"allowManagedMcpServersOnly": true}));
        assert!(blocks(d.path(), "gatehouse", Some(url))
            .unwrap()
            .contains("allowManagedMcpServersOnly"));
        set(serde_json::json!({}));
        std::fs::write(
            d.path().join("managed-mcp.json"),
            serde_json::json!({"mcpServers": {"github": {}}}).to_string(),
        )
        .unwrap();
        assert!(blocks(d.path(), "gatehouse", Some(url))
            .unwrap()
            .contains("managed-mcp.json"));
    }
}
