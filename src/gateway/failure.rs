//! A failed call, explained: the text a person reads in Activity (the server's JSON-RPC error
//! message, its `isError` result's text, or Gatehouse's own refusal), and — for a confined
//! server whose failure may be the sandbox's doing (`sandbox::blame`) — the sandbox named in
//! what the client gets too, with the path and the line that allows it. Only failed lines are
//! read here, and only up to [`MAX_READ`]: a success passes as it came.

use crate::activity::CallOutcome;
use crate::sandbox::Confined;

/// A failed line longer than this is not read for its text (a huge `isError` result).
const MAX_READ: usize = 64 * 1024;

/// The text of a failure: a JSON-RPC line's error message, or an `isError` result's text
/// contents (a whole line or a bare result object).
pub(super) fn text_of(json: &[u8]) -> Option<String> {
    if json.len() > MAX_READ {
        return Some(format!("(a failure of {} bytes, not kept)", json.len()));
    }
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    if let Some(m) = v.pointer("/error/message").and_then(|m| m.as_str()) {
        return Some(m.to_owned());
    }
    let result = v.get("result").unwrap_or(&v);
    let texts: Vec<&str> = result
        .get("content")?
        .as_array()?
        .iter()
        .filter_map(|c| c.get("text").and_then(|t| t.as_str()))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// The line a client gets for a call that ended with `outcome`, and the failure's text for
/// Activity. A confined server's failure that the sandbox may have caused — by its text, or by
/// what the server wrote to stderr during the call (`stderr`, read only then) — gets the
/// sandbox's sentence added: to the error's message, or as a text item of the `isError` result.
pub(super) fn explain(
    line: Vec<u8>,
    outcome: CallOutcome,
    (confined, called_at): (Option<&Confined>, u64),
    server: &str,
    stderr: impl FnOnce() -> String,
) -> (Vec<u8>, Option<String>) {
    let failed = matches!(
        outcome,
        CallOutcome::IsError
            | CallOutcome::ProtocolError
            | CallOutcome::Lost
            | CallOutcome::TimedOut
    );
    // A fenced server refused a destination during the call: Activity says so whatever the
    // outcome, and a failure names it first.
    let refused = confined.and_then(|c| refused_during(c, server, called_at));
    if !failed {
        return (line, refused);
    }
    let Some(text) = text_of(&line) else {
        return (line, refused);
    };
    let Some(blame) = refused.or_else(|| sandbox_said(&text, confined?, server, stderr)) else {
        return (line, Some(text));
    };
    let said = format!("{text} — {blame}");
    let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&line) else {
        return (line, Some(said));
    };
    let note = format!("Gatehouse: {blame}");
    if let Some(m) = v.pointer_mut("/error/message") {
        *m = serde_json::Value::String(format!("{text} — {note}"));
    } else if let Some(content) = v
        .pointer_mut("/result/content")
        .and_then(|c| c.as_array_mut())
    {
        content.push(serde_json::json!({"type": "text", "text": note}));
    } else {
        return (line, Some(said));
    }
    match serde_json::to_vec(&v) {
        Ok(mut out) => {
            out.push(b'\n');
            if !line.ends_with(b"\n") {
                out.pop();
            }
            (out, Some(said))
        }
        Err(_) => (line, Some(said)),
    }
}

/// What the sandbox may have done, from the failure's text, then with what the server wrote to
/// stderr during the call (read only when the text alone says nothing): a fenced server's
/// refused connection, else a path the plan left out (`sandbox::blame`).
fn sandbox_said(
    text: &str,
    c: &Confined,
    server: &str,
    stderr: impl FnOnce() -> String,
) -> Option<String> {
    if let Some(s) =
        fenced_refusal(text, c, server).or_else(|| crate::sandbox::blame::blame(text, c, server))
    {
        return Some(s);
    }
    let both = format!("{text}\n{}", stderr());
    fenced_refusal(&both, c, server).or_else(|| crate::sandbox::blame::blame(&both, c, server))
}

/// The sentence for a fenced server's failure that reads as a refused connection or socket:
/// what went around its proxy (a direct TCP connection, UDP) is refused by the kernel.
fn fenced_refusal(text: &str, c: &Confined, server: &str) -> Option<String> {
    c.plan.egress_port?;
    if !crate::sandbox::blame::refusal(text) {
        return None;
    }
    Some(format!(
        "the sandbox fences this server's network: it may open TCP connections only to its egress proxy (named in HTTP_PROXY and HTTPS_PROXY, which its HTTP client must use) and no UDP, so a direct connection or a datagram is refused; allow more destinations in servers.{server}.network.allow, or set \"network\": true"
    ))
}

/// The sentence for the destinations a fenced server's proxy refused since `since_ms` (at most
/// three named), with the line that allows the first.
fn refused_during(c: &Confined, server: &str, since_ms: u64) -> Option<String> {
    let rows = c.refused.as_ref()?.since(since_ms);
    let first = rows.first()?;
    let named: Vec<String> = rows
        .iter()
        .take(3)
        .map(|r| format!("{}:{} ({})", crate::text::reveal(&r.host), r.port, r.why))
        .collect();
    Some(format!(
        "the sandbox refused a connection during this call to {}; to allow it, add \"{}:{}\" to servers.{server}.network.allow",
        named.join(", "),
        crate::text::reveal(&first.host),
        first.port
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::plan::Plan;

    fn confined() -> Confined {
        Confined {
            plan: Plan {
                read: vec!["/".into()],
                write: vec!["/nonexistent-own-place".into()],
                network: true,
                left_out: 0,
                list: Vec::new(),
                egress_port: None,
            },
            summary: "default".into(),
            ..Confined::default()
        }
    }

    /// A confined server's refusal reaches the client and Activity with the sandbox named (in
    /// the error's message, or as a text item of an isError result); an unconfined server's,
    /// or a success, passes unchanged.
    #[test]
    fn a_refusal_names_the_sandbox_for_the_client_and_activity() {
        let err = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"EACCES: permission denied, open '/etc/x.json'"}}"#.to_vec();
        let (line, text) = explain(
            err.clone(),
            CallOutcome::ProtocolError,
            (Some(&confined()), 0),
            "mem",
            String::new,
        );
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        let m = v["error"]["message"].as_str().unwrap();
        assert!(m.contains("sandbox") && m.contains("/etc/x.json"), "{m}");
        assert!(text.unwrap().contains("sandbox"));
        let (same, text) = explain(
            err.clone(),
            CallOutcome::ProtocolError,
            (None, 0),
            "mem",
            String::new,
        );
        assert_eq!(same, err);
        assert_eq!(
            text.as_deref(),
            Some("EACCES: permission denied, open '/etc/x.json'")
        );

        let res = br#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"Error: EACCES: permission denied, open '/etc/y'"}],"isError":true}}"#.to_vec();
        let (line, text) = explain(
            res,
            CallOutcome::IsError,
            (Some(&confined()), 0),
            "mem",
            String::new,
        );
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["result"]["content"].as_array().unwrap().len(), 2);
        assert!(v["result"]["content"][1]["text"]
            .as_str()
            .unwrap()
            .starts_with("Gatehouse: the sandbox"));
        assert!(text.unwrap().contains("/etc/y"));

        // A failure that says nothing of a refusal, while the server's stderr during the call
        // does.
        let vague = br#"{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"Error executing tool fetch"}],"isError":true}}"#.to_vec();
        let said = || "npm ERR! code EACCES\nnpm ERR! path /opt/tool/node_modules".to_owned();
        let (_, text) = explain(
            vague,
            CallOutcome::IsError,
            (Some(&confined()), 0),
            "fetch",
            said,
        );
        let text = text.unwrap();
        assert!(
            text.contains("sandbox") && text.contains("/opt/tool/node_modules"),
            "{text}"
        );

        let ok = br#"{"jsonrpc":"2.0","id":5,"result":{"content":[]}}"#.to_vec();
        assert_eq!(
            explain(
                ok.clone(),
                CallOutcome::Ok,
                (Some(&confined()), 0),
                "mem",
                String::new
            ),
            (ok, None)
        );
    }
}
