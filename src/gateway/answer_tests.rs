//! The answer table: for each way a call ends, the outcome the activity log records and what the
//! client gets — without a process.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::*;

fn result(text: &str) -> (Result<Reply, CallError>, Option<ResultView>) {
    let raw = RawValue::from_string(text.to_owned()).unwrap();
    (
        Ok(Reply::Result(jsonrpc::RawJson::from_raw(&raw))),
        Some(ResultView::of(text)),
    )
}

fn end(
    (result, view): (Result<Reply, CallError>, Option<ResultView>),
    era: Era,
    exposed: Option<&str>,
) -> (CallOutcome, Value) {
    let (outcome, line) = answer(Ending {
        result,
        view,
        era,
        client_id: "7",
        server: "fx",
        method: "tools/call",
        exposed,
        input_failure: None,
        client_capabilities: Some("{}"),
    });
    assert_eq!(line.last(), Some(&b'\n'), "a line ends with its newline");
    (outcome, serde_json::from_slice(&line).unwrap())
}

fn text(v: &Value) -> &str {
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn a_result_passes_as_sent_and_its_is_error_flag_is_the_outcome() {
    let sent = r#"{"content":[{"type":"text","text":"hi"}],"x-extra":{"kept":true}}"#;
    let (outcome, v) = end(result(sent), Era::Legacy, Some("fx__echo"));
    assert_eq!(outcome, CallOutcome::Ok);
    assert_eq!(v["id"], 7);
    assert_eq!(v["result"], serde_json::from_str::<Value>(sent).unwrap());
    let (outcome, _) = end(
        result(r#"{"content":[],"isError":true}"#),
        Era::Legacy,
        Some("fx__echo"),
    );
    assert_eq!(outcome, CallOutcome::IsError);
}

#[test]
fn a_servers_error_reaches_the_client_unchanged() {
    let e = RawValue::from_string(r#"{"code":-32000,"message":"nope","data":[1]}"#.into()).unwrap();
    let (outcome, v) = end((Ok(Reply::Error(e)), None), Era::Legacy, Some("fx__echo"));
    assert_eq!(outcome, CallOutcome::ProtocolError);
    assert_eq!(
        v["error"],
        json!({"code": -32000, "message": "nope", "data": [1]})
    );
}

#[test]
fn a_timeout_is_a_tool_error_naming_the_setting_or_a_json_rpc_error_for_other_methods() {
    let timeout = || {
        (
            Err(CallError::Timeout {
                server: "fx".into(),
                secs: 30,
            }),
            None,
        )
    };
    let (outcome, v) = end(timeout(), Era::Legacy, Some("fx__slow"));
    assert_eq!(outcome, CallOutcome::TimedOut);
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert!(
        text(&v).contains("fx__slow within 30 s (its call_timeout_secs)"),
        "{v}"
    );
    let (outcome, v) = end(timeout(), Era::Legacy, None);
    assert_eq!(outcome, CallOutcome::TimedOut);
    assert_eq!(v["error"]["code"], -32603, "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("tools/call within 30 s"));
    // A 2026 client gets ours with its resultType.
    let (_, v) = end(timeout(), Era::Modern, Some("fx__slow"));
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
}

#[test]
fn a_lost_call_says_its_outcome_is_unknown() {
    let lost = (
        Err(CallError::Lost {
            server: "fx".into(),
            detail: "exited".into(),
        }),
        None,
    );
    let (outcome, v) = end(lost, Era::Legacy, Some("fx__echo"));
    assert_eq!(outcome, CallOutcome::Lost);
    assert!(
        text(&v).ends_with("the outcome of fx__echo is unknown."),
        "{v}"
    );
}

#[test]
fn input_requests_reach_only_clients_that_can_answer_them() {
    let asks = r#"{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}}}"#;
    // A 2025 client cannot answer one at all: an isError result saying so.
    let (outcome, v) = end(result(asks), Era::Legacy, Some("fx__ask"));
    assert_eq!(outcome, CallOutcome::IsError);
    assert!(
        text(&v).contains("could not be relayed to this client"),
        "{v}"
    );
    // A 2026 client that did not declare elicitation: -32021 naming the capability.
    let (outcome, v) = end(result(asks), Era::Modern, Some("fx__ask"));
    assert_eq!(outcome, CallOutcome::ProtocolError);
    assert_eq!(v["error"]["code"], -32021, "{v}");
    assert!(
        v["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{v}"
    );
}

#[test]
fn a_2025_client_gets_no_2026_members() {
    let modern = r#"{"resultType":"complete","ttlMs":5,"content":[]}"#;
    let (_, v) = end(result(modern), Era::Legacy, Some("fx__echo"));
    assert!(v["result"].get("resultType").is_none(), "{v}");
    assert!(v["result"].get("ttlMs").is_none(), "{v}");
    let (_, v) = end(result(modern), Era::Modern, Some("fx__echo"));
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
}

/// A refusal's text is sent whole: a `{tool}` a person typed in a deny reason stays as typed.
#[test]
fn a_refusal_is_sent_as_made() {
    let line = refused(
        "3",
        "Denied by the user in Gatehouse: not {tool} again",
        Era::Legacy,
    );
    let v: Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(
        text(&v),
        "Denied by the user in Gatehouse: not {tool} again"
    );
    assert_eq!(v["result"]["isError"], true);
}
