//! What in an imported entry is a credential: env and header names that usually hold one, and
//! command-line arguments whose values are hidden when the entry is shown.

use std::collections::BTreeMap;

/// The keys whose values look like credentials: a credential-like name with a value that is no
/// placeholder (`${…}`, `$VAR`, `{env:…}` become references when the entry is read; a
/// placeholder is never moved to the keychain as if it were the secret) and no path (a file's
/// place is not the secret it may hold: `SSH_KEY=~/.ssh/id_ed25519`).
pub fn credential_values(m: &BTreeMap<String, String>) -> Vec<String> {
    m.iter()
        .filter(|(k, v)| {
            let placeholder = v.contains("${")
                || v.starts_with('$')
                || (v.starts_with("{env:") && v.ends_with('}'));
            let path = (v.starts_with('/') || v.starts_with("~/") || v.starts_with("./"))
                && !v.contains(char::is_whitespace);
            looks_like_credential(k) && !placeholder && !path
        })
        .map(|(k, _)| k.clone())
        .collect()
}

/// `args` with the values of credential-bearing arguments replaced by `(hidden)`: a header
/// argument naming a credential (`Authorization: Bearer …`), and the value of a flag whose name
/// looks like one (`--api-key X`, `--token=X`).
pub fn hide_credential_args(args: &[&str]) -> Vec<String> {
    const HIDDEN: &str = "(hidden)";
    // Header and flag names spell words with dashes: `X-API-Key`, `--api-key`.
    let credential = |name: &str| looks_like_credential(&name.replace('-', "_"));
    let mut out = Vec::with_capacity(args.len());
    let mut hide_next = false;
    for a in args {
        if std::mem::take(&mut hide_next) {
            out.push(HIDDEN.to_owned());
            continue;
        }
        if a.contains("://") {
            out.push(hide_credential_query(a));
            continue;
        }
        if let Some((name, _)) = a
            .split_once(':')
            .filter(|(n, _)| !n.is_empty() && !n.contains(char::is_whitespace) && credential(n))
        {
            out.push(format!("{name}: {HIDDEN}"));
            continue;
        }
        let flag = a.trim_start_matches('-');
        if a.starts_with('-') && !flag.is_empty() {
            match flag.split_once('=') {
                Some((name, _)) if credential(name) => {
                    out.push(format!(
                        "{}={HIDDEN}",
                        &a[..a.len() - flag.len() + name.len()]
                    ));
                    continue;
                }
                None if credential(flag) => hide_next = true,
                _ => {}
            }
        }
        out.push((*a).to_owned());
    }
    out
}

/// `url` with the values of credential-named query parameters (`?api_key=…`, `&token=…`)
/// replaced by `(hidden)`; anything else, or text that is no URL, as it is.
pub fn hide_credential_query(url: &str) -> String {
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        return url.to_owned();
    };
    let pairs: Vec<(String, String)> = parsed.query_pairs().into_owned().collect();
    let credential = |k: &str| looks_like_credential(&k.replace('-', "_"));
    if !pairs.iter().any(|(k, _)| credential(k)) {
        return url.to_owned();
    }
    parsed
        .query_pairs_mut()
        .clear()
        .extend_pairs(pairs.iter().map(|(k, v)| {
            (
                k.as_str(),
                if credential(k) {
                    "(hidden)"
                } else {
                    v.as_str()
                },
            )
        }));
    parsed.to_string()
}

/// Env or header names whose values are usually credentials — not a name for a place
/// (`…_PATH`, `…_FILE`, `…_DIR`, `…_FOLDER`, `…_DIRECTORY`, `…_ROOT`, `…_HOME`), whose value says
/// where something is (`MEMORY_FILE_PATH`, `API_KEY_FILE`), not the secret itself.
pub fn looks_like_credential(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    let place = [
        "_PATH",
        "_FILE",
        "_DIR",
        "_DIRECTORY",
        "_FOLDER",
        "_ROOT",
        "_HOME",
    ]
    .iter()
    .any(|s| n.ends_with(s));
    if place {
        return false;
    }
    [
        "TOKEN",
        "_KEY",
        "APIKEY",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "_PAT",
        "AUTHORIZATION",
        "CREDENTIAL",
        "PRIVATE",
    ]
    .iter()
    .any(|p| n.contains(p))
        || n == "KEY"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names and values that hold a secret are flagged; a file's place is not (by its name's
    /// ending, or a value that is a path).
    #[test]
    fn places_are_not_credentials() {
        for yes in [
            "API_KEY",
            "GITHUB_TOKEN",
            "GITHUB_PAT",
            "Authorization",
            "DB_PASSWORD",
        ] {
            assert!(looks_like_credential(yes), "{yes}");
        }
        for no in [
            "MEMORY_FILE_PATH",
            "API_KEY_FILE",
            "SSH_KEY_PATH",
            "TOKEN_DIR",
            "LOG_LEVEL",
        ] {
            assert!(!looks_like_credential(no), "{no}");
        }
        let m: BTreeMap<String, String> = [
            ("API_KEY", "sk-live-1"),
            ("SSH_KEY", "~/.ssh/id_ed25519"),
            ("TOKEN", "${env:TOKEN}"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(credential_values(&m), ["API_KEY"]);
    }
}
