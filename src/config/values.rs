//! What a server entry hands a process or a request, checked at the edge: environment names and
//! values, header names and values, and references. Nothing that reaches `execve` or an HTTP
//! request can carry a line break, a NUL, a framing header or one of Gatehouse's own tokens;
//! `"$VAR"` / `"${VAR}"` (the form Claude Code and others write) becomes `{"env": "VAR"}`.

use std::collections::BTreeMap;

use super::refusal::{at, EntryError};
use super::EnvValue;

/// The prefix of Gatehouse's own variables (`GATEHOUSE_TOKEN`, `GATEHOUSE_CONTROL`, …): never
/// handed to a server by reference.
const OWN_PREFIX: &str = "GATEHOUSE_";

/// The keychain names of Gatehouse's own tokens that a `{"secret": …}` could name (the others,
/// `client-token:ID` and `oauth:ID`, hold a ':' that no secret name can).
const OWN_SECRETS: &[&str] = &[super::GATEWAY_TOKEN_SECRET];

/// Headers Gatehouse (or HTTP itself) sets: framing, hop-by-hop and the protocol's own.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-connection",
    "expect",
    "mcp-session-id",
    "mcp-protocol-version",
];

/// The variable a whole value names — `$VAR`, `${VAR}` (Claude Code), `${env:VAR}` (Cursor,
/// VS Code) or `{env:VAR}` (opencode) — if that is all it is.
fn dollar_reference(v: &str) -> Option<&str> {
    let name = v
        .strip_prefix("${env:")
        .or_else(|| v.strip_prefix("{env:"))
        .or_else(|| v.strip_prefix("${"))
        .and_then(|r| r.strip_suffix('}'))
        .or_else(|| v.strip_prefix('$'))?;
    let ok = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    ok.then_some(name)
}

/// VS Code's `${input:ID}` ending a value — a value the client asks the person for — split into
/// the text before it and the ID, when the ID can be a keychain secret's name.
fn input_reference(v: &str) -> Option<(&str, &str)> {
    let (before, rest) = v.rsplit_once("${input:")?;
    let id = rest.strip_suffix('}')?;
    (!before.contains("${") && secret_name_refusal(id).is_ok()).then_some((before, id))
}

/// One value's references: `$VAR` (and the other spellings of a variable) made
/// `{"env": "VAR"}`, VS Code's `${input:ID}` made the keychain secret `ID` (after any fixed
/// text, as its prefix) — a missing one fails that server naming `gatehouse secret set ID`;
/// another `${…}` inside a value, an `{"env": "GATEHOUSE_…"}` or a secret that is Gatehouse's
/// own token refused.
fn check_value(field: &'static str, key: &str, v: &mut EnvValue) -> Result<(), EntryError> {
    if let EnvValue::Plain(text) = v {
        if let Some(name) = dollar_reference(text) {
            *v = EnvValue::Env {
                env: name.to_owned(),
            };
        } else if let Some((prefix, id)) = input_reference(text) {
            *v = EnvValue::Secret {
                secret: id.to_owned(),
                prefix: (!prefix.is_empty()).then(|| prefix.to_owned()),
            };
        } else if text.contains("${") {
            return Err(at(
                field,
                // The value itself is not quoted: the rest of it may be a secret.
                format!("{key} has a placeholder (\"${{…}}\") inside its value, which Gatehouse does not expand"),
                "make the whole value a reference: {\"env\": \"VAR\"} (or \"$VAR\"), or {\"secret\": NAME, \"prefix\": TEXT} for a keychain secret after fixed text",
            ));
        }
    }
    match v {
        EnvValue::Plain(text) if text.contains(['\0', '\r', '\n']) && field == "headers" => {
            Err(at(
                field,
                format!("the value of header {key} has a line break or NUL"),
                "give the header one line of text",
            ))
        }
        EnvValue::Plain(text) if text.contains('\0') => Err(at(
            field,
            format!("the value of {key} has a NUL character"),
            "remove it: a process's environment cannot carry NUL",
        )),
        EnvValue::Env { env } if env.starts_with(OWN_PREFIX) => Err(at(
            field,
            format!("{key} refers to {env}, one of Gatehouse's own variables"),
            "give the server its own value or secret: Gatehouse never hands its own settings or tokens to a server",
        )),
        EnvValue::Secret { secret, .. } if OWN_SECRETS.contains(&secret.as_str()) => Err(at(
            field,
            format!("{key} refers to the secret \"{secret}\", Gatehouse's own gateway token"),
            "give the server a secret of its own: a server holding Gatehouse's token could call every tool without asking",
        )),
        EnvValue::Secret {
            prefix: Some(p), ..
        } if p.contains(['\0', '\r', '\n']) => Err(at(
            field,
            format!("the prefix of {key} has a line break or NUL"),
            "give a prefix of one line, such as \"Bearer \"",
        )),
        _ => Ok(()),
    }
}

/// A stdio server's `env`: names without `=`, NUL or line breaks; values checked.
pub(super) fn check_env(env: &mut BTreeMap<String, EnvValue>) -> Result<(), EntryError> {
    for (key, v) in env.iter_mut() {
        if key.is_empty() || key.contains(['=', '\0']) || key.chars().any(char::is_control) {
            return Err(at(
                "env",
                format!("invalid env variable name {key:?}"),
                "use a name without '=', spaces, line breaks or other control characters, such as GITHUB_TOKEN",
            ));
        }
        check_value("env", key, v)?;
    }
    Ok(())
}

/// A remote server's `headers`: names are HTTP tokens and not ones Gatehouse or HTTP sets;
/// values one line.
pub(super) fn check_headers(headers: &mut BTreeMap<String, EnvValue>) -> Result<(), EntryError> {
    for (name, v) in headers.iter_mut() {
        let token = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            return Err(at(
                "headers",
                format!("invalid header name {name:?}"),
                "use letters, digits and '-' only, such as X-Api-Key",
            ));
        }
        if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(at(
                "headers",
                format!(
                    "the header {name} is set by Gatehouse (or by HTTP itself) for every request"
                ),
                format!("remove {name} from \"headers\""),
            ));
        }
        check_value("headers", name, v)?;
    }
    Ok(())
}

/// What is wrong with a secret name, and the fix.
pub(super) fn secret_name_refusal(name: &str) -> Result<(), (String, String)> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err((
            format!("invalid secret name \"{name}\""),
            "use 1 to 64 characters of a-z, A-Z, 0-9, '.', '_' and '-'".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, EnvValue)]) -> BTreeMap<String, EnvValue> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    fn plain(s: &str) -> EnvValue {
        EnvValue::Plain(s.into())
    }

    /// `$VAR` and `${VAR}` as a whole value become references; other dollars stay text.
    #[test]
    fn dollar_values_become_env_references() {
        let mut e = env(&[
            ("A", plain("$GH_TOKEN")),
            ("B", plain("${API_KEY}")),
            ("C", plain("$5 a month")),
            ("D", plain("$HOME/bin")),
        ]);
        check_env(&mut e).unwrap();
        assert_eq!(
            e["A"],
            EnvValue::Env {
                env: "GH_TOKEN".into()
            }
        );
        assert_eq!(
            e["B"],
            EnvValue::Env {
                env: "API_KEY".into()
            }
        );
        assert_eq!(e["C"], plain("$5 a month"));
        assert_eq!(e["D"], plain("$HOME/bin"));
        // The other clients' spellings of a variable, and VS Code's prompt for a value: a
        // keychain secret of that name (after fixed text, as its prefix).
        let mut e = env(&[
            ("E", plain("${env:GH_TOKEN}")),
            ("F", plain("{env:API_KEY}")),
            ("G", plain("${input:github-token}")),
            ("H", plain("Bearer ${input:api-key}")),
        ]);
        check_env(&mut e).unwrap();
        assert_eq!(
            e["E"],
            EnvValue::Env {
                env: "GH_TOKEN".into()
            }
        );
        assert_eq!(
            e["F"],
            EnvValue::Env {
                env: "API_KEY".into()
            }
        );
        assert_eq!(
            e["G"],
            EnvValue::Secret {
                secret: "github-token".into(),
                prefix: None
            }
        );
        assert_eq!(
            e["H"],
            EnvValue::Secret {
                secret: "api-key".into(),
                prefix: Some("Bearer ".into())
            }
        );
        let mut bad = env(&[("I", plain("${input:has space}"))]);
        assert!(check_env(&mut bad).is_err());
    }

    /// Each refusal: what reaches a process or a request cannot smuggle a line, a NUL, a framing
    /// header or Gatehouse's own token.
    #[test]
    fn what_reaches_a_process_or_request_is_refused_at_the_edge() {
        for (key, v) in [
            ("A\nB", plain("1")),
            ("A B\t", plain("1")),
            ("K", plain("a\0b")),
            ("K", plain("Bearer ${TOKEN}")),
            (
                "K",
                EnvValue::Env {
                    env: "GATEHOUSE_TOKEN".into(),
                },
            ),
            ("K", plain("$GATEHOUSE_CONTROL")),
            (
                "K",
                EnvValue::Secret {
                    secret: "gateway-token".into(),
                    prefix: None,
                },
            ),
        ] {
            let mut e = env(&[(key, v.clone())]);
            let err = check_env(&mut e).expect_err(&format!("{key:?} = {v:?}"));
            assert_eq!(err.field, Some("env"));
            assert!(!err.fix.is_empty());
        }
        for (name, v) in [
            ("X", plain("1\r\nY: 2")),
            ("X: 1", plain("1")),
            ("Host", plain("example.com")),
            ("content-length", plain("5")),
            ("Mcp-Session-Id", plain("s")),
            (
                "X",
                EnvValue::Env {
                    env: "GATEHOUSE_TOKEN".into(),
                },
            ),
            (
                "Authorization",
                EnvValue::Secret {
                    secret: "t".into(),
                    prefix: Some("Bearer\r\n".into()),
                },
            ),
        ] {
            let mut h = env(&[(name, v.clone())]);
            let err = check_headers(&mut h).expect_err(&format!("{name:?} = {v:?}"));
            assert_eq!(err.field, Some("headers"));
        }
        // A refusal never quotes the value: the rest of it may be a secret.
        let mut leaky = env(&[("K", plain("sk-live-0123456789 ${X}"))]);
        let err = check_env(&mut leaky).unwrap_err();
        assert!(!err.to_string().contains("sk-live"), "{err}");
        let mut ok = env(&[
            ("Authorization", plain("Bearer abc")),
            ("X-Api-Key", plain("k")),
        ]);
        check_headers(&mut ok).unwrap();
    }
}
