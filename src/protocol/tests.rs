//! The protocol module's unit tests.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::*;
use crate::jsonrpc::scan;

fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_owned()).unwrap()
}

#[test]
fn each_hop_gets_only_its_own_envelope() {
    let modern_client = raw(&format!(
        r#"{{"name":"t","arguments":{{"a":1}},"_meta":{{"{PROTOCOL_VERSION_KEY}":"2026-07-28","{CLIENT_CAPABILITIES_KEY}":{{"elicitation":{{}}}},"{CLIENT_INFO_KEY}":{{"name":"c"}},"{LOG_LEVEL_KEY}":"info","traceparent":"00-ab-cd-01","progressToken":7}}}}"#
    ));
    // To a legacy server: the envelope and the log level leave, the rest stays.
    let legacy = for_upstream(Some(&modern_client), Era::Legacy, None).unwrap();
    let v: serde_json::Value = serde_json::from_str(&legacy).unwrap();
    assert_eq!(
        v["_meta"],
        serde_json::json!({"traceparent":"00-ab-cd-01","progressToken":7})
    );
    assert_eq!(v["arguments"], serde_json::json!({"a":1}));
    // To a modern server: ours, with the client's capabilities (an empty elicitation read as
    // form mode, by the table in protocol/capabilities.rs).
    let modern = for_upstream(Some(&modern_client), Era::Modern, None).unwrap();
    let v: serde_json::Value = serde_json::from_str(&modern).unwrap();
    assert_eq!(v["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28");
    assert_eq!(v["_meta"][CLIENT_INFO_KEY]["name"], "gatehouse");
    assert_eq!(
        v["_meta"][CLIENT_CAPABILITIES_KEY],
        serde_json::json!({"elicitation":{"form":{}}})
    );
    // A 2025 client's request carries no capabilities: its session's go in.
    let legacy_client = RawValue::from_string(r#"{"name":"t","arguments":{}}"#.into()).unwrap();
    let from_session: serde_json::Value = serde_json::from_str(
        &for_upstream(
            Some(&legacy_client),
            Era::Modern,
            Some(r#"{"elicitation":{}}"#),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        from_session["_meta"][CLIENT_CAPABILITIES_KEY],
        serde_json::json!({"elicitation":{"form":{}}})
    );
    assert_eq!(v["_meta"][LOG_LEVEL_KEY], "info");
    assert_eq!(v["_meta"]["traceparent"], "00-ab-cd-01");
    // A legacy client's request to a legacy server is not touched at all; to a modern one it
    // gets our envelope with no capabilities.
    let plain = raw(r#"{"name":"t","_meta":{"progressToken":1}}"#);
    assert!(for_upstream(Some(&plain), Era::Legacy, None).is_none());
    let v: serde_json::Value =
        serde_json::from_str(&for_upstream(Some(&plain), Era::Modern, None).unwrap()).unwrap();
    assert_eq!(v["_meta"][CLIENT_CAPABILITIES_KEY], serde_json::json!({}));
    assert_eq!(v["_meta"]["progressToken"], 1);
    let none: serde_json::Value =
        serde_json::from_str(&for_upstream(None, Era::Modern, None).unwrap()).unwrap();
    assert_eq!(none["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28");
}

#[test]
fn envelopes_are_read_or_refused_precisely() {
    let env = |meta: &str| read_envelope(Some(&raw(&format!(r#"{{"_meta":{meta}}}"#))));
    assert!(matches!(
        read_envelope(Some(&raw(r#"{"_meta":{"progressToken":1}}"#))),
        Ok(None)
    ));
    assert!(matches!(read_envelope(None), Ok(None)));
    let ok = env(&format!(
        r#"{{"{PROTOCOL_VERSION_KEY}":"2026-07-28","{CLIENT_CAPABILITIES_KEY}":{{}},"{CLIENT_INFO_KEY}":{{"name":"n","version":"1"}}}}"#
    ))
    .unwrap()
    .unwrap();
    assert_eq!(ok.client, (Some("n".into()), Some("1".into())));
    assert!(matches!(
        env(&format!(r#"{{"{PROTOCOL_VERSION_KEY}":"2026-07-28"}}"#)),
        Err(EnvelopeError::Invalid(_))
    ));
    assert!(matches!(
        env(&format!(
            r#"{{"{PROTOCOL_VERSION_KEY}":7,"{CLIENT_CAPABILITIES_KEY}":{{}}}}"#
        )),
        Err(EnvelopeError::Invalid(_))
    ));
    assert_eq!(
        env(&format!(
            r#"{{"{PROTOCOL_VERSION_KEY}":"2025-11-25","{CLIENT_CAPABILITIES_KEY}":{{}}}}"#
        ))
        .unwrap_err(),
        EnvelopeError::Unsupported("2025-11-25".into())
    );
    // What the one-pass scan cannot decide, a parser does, with the same answer: a key spelled
    // with escapes, a key given twice (the last wins, as for the server), `_meta` no object.
    let escaped = CLIENT_INFO_KEY.replace("clientInfo", "\\u0063lientInfo");
    assert_eq!(
        env(&format!(
            r#"{{"{PROTOCOL_VERSION_KEY}":"2026-07-28","{CLIENT_CAPABILITIES_KEY}":{{}},"{escaped}":{{"name":"e"}}}}"#
        ))
        .unwrap()
        .unwrap()
        .client
        .0
        .as_deref(),
        Some("e")
    );
    assert_eq!(
        env(&format!(
            r#"{{"{PROTOCOL_VERSION_KEY}":"2026-07-28","{PROTOCOL_VERSION_KEY}":"2025-11-25","{CLIENT_CAPABILITIES_KEY}":{{}}}}"#
        ))
        .unwrap_err(),
        EnvelopeError::Unsupported("2025-11-25".into())
    );
    assert!(matches!(
        read_envelope(Some(&raw(&format!(
            r#"{{"_meta":[1],"x":"{PROTOCOL_VERSION_KEY}"}}"#
        )))),
        Ok(None)
    ));
}

#[test]
fn results_carry_their_type_and_our_hop_only() {
    // A legacy server's result to a modern client: resultType and our identity added,
    // nothing else moves.
    let r = r#"{"content":[{"type":"text","text":"resultType"}],"isError":false}"#;
    let ours = format!(r#""_meta":{{"{SERVER_INFO_KEY}":{}}}"#, our_info());
    assert_eq!(
        for_client(r, Era::Modern),
        format!(
            r#"{{"resultType":"complete",{ours},"content":[{{"type":"text","text":"resultType"}}],"isError":false}}"#
        )
    );
    assert_eq!(
        for_client("{}", Era::Modern),
        format!(r#"{{"resultType":"complete",{ours}}}"#)
    );
    // A modern server's identity is replaced by ours; its other keys stay.
    let m2 = format!(
        r#"{{"resultType":"complete","_meta":{{"{SERVER_INFO_KEY}":{{"name":"up"}},"trace":1}}}}"#
    );
    let v: serde_json::Value = serde_json::from_str(&for_client(&m2, Era::Modern)).unwrap();
    assert_eq!(v["_meta"][SERVER_INFO_KEY]["name"], "gatehouse");
    assert_eq!(v["_meta"]["trace"], 1);
    assert_eq!(v["resultType"], "complete");
    // Untouched for a legacy client, and not copied.
    assert!(matches!(for_client(r, Era::Legacy), Cow::Borrowed(_)));
    // A modern server's identity leaves, and so do the members only 2026-07-28 defines
    // (`resultType`, `ttlMs`, `cacheScope`): a 2025 client gets none of them.
    let m = format!(
        r#"{{"resultType":"complete","content":[],"ttlMs":5,"cacheScope":"public","_meta":{{"{SERVER_INFO_KEY}":{{"name":"up"}},"trace":1}}}}"#
    );
    assert_eq!(
        for_client(&m, Era::Legacy),
        r#"{"_meta":{"trace":1},"content":[]}"#
    );
    assert_eq!(
        for_client(
            r#"{"resultType":"complete","content":[{"type":"text","text":"x"}]}"#,
            Era::Legacy
        ),
        r#"{"content":[{"type":"text","text":"x"}]}"#
    );
    // An identity alone in `_meta`: the member goes with it.
    let alone = format!(
        r#"{{"content":[],"_meta":{{"{SERVER_INFO_KEY}":{{"name":"up"}}}},"isError":false}}"#
    );
    assert_eq!(
        for_client(&alone, Era::Legacy),
        r#"{"content":[],"isError":false}"#
    );
    assert_eq!(result_kind(&m), ResultKind::Complete);
    assert_eq!(
        result_kind(r#"{"resultType":"input_required","inputRequests":{}}"#),
        ResultKind::InputRequired
    );
    let list = list_for_client(r#"{"tools":[]}"#, Era::Modern);
    let v: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(v["resultType"], "complete");
    assert_eq!(v["cacheScope"], "private");
    assert_eq!(v["ttlMs"], LIST_TTL_MS);
    assert_eq!(v["_meta"][SERVER_INFO_KEY]["name"], "gatehouse");
}

#[test]
fn header_values_round_trip_and_malformed_ones_match_nothing() {
    for (value, encoded) in [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ] {
        assert_eq!(encode_header_value(value), encoded);
        assert_eq!(decode_header_value(encoded).as_deref(), Some(value));
    }
    assert_eq!(decode_header_value("=?base64?!!!?="), None);
    assert_eq!(decode_header_value("=?base64?SGk=x?="), None);
    assert_eq!(
        decode_header_value("=?base64?SGl=?="),
        None,
        "non-canonical"
    );
}

#[test]
fn x_mcp_header_annotations_are_checked_like_the_revision_says() {
    use serde_json::json;
    let ok = json!({"type":"object","properties":{
        "region":{"type":"string","x-mcp-header":"Region"},
        "nested":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}},
        "q":{"type":"string"}}});
    assert_eq!(invalid_x_mcp_header(&ok), None);
    let mut found = x_mcp_headers(&ok);
    found.sort();
    assert_eq!(
        found,
        vec![
            (vec!["nested".to_owned(), "n".to_owned()], "N".to_owned()),
            (vec!["region".to_owned()], "Region".to_owned())
        ]
    );
    for bad in [
        json!({"properties":{"a":{"type":"number","x-mcp-header":"A"}}}),
        json!({"properties":{"a":{"type":"string","x-mcp-header":"A B"}}}),
        json!({"properties":{"a":{"type":"string","x-mcp-header":""}}}),
        json!({"properties":{"a":{"type":"string","x-mcp-header":7}}}),
        json!({"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}),
        json!({"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}),
        json!({"anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}),
        json!({"type":"string","x-mcp-header":"Root"}),
    ] {
        assert!(invalid_x_mcp_header(&bad).is_some(), "{bad}");
    }
}

/// The full parse the scan stands in for.
fn by_serde(raw: &str) -> bool {
    #[derive(Deserialize)]
    struct R {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_str::<R>(raw).ok().and_then(|r| r.is_error) == Some(true)
}

#[test]
fn the_top_level_scan_agrees_with_a_full_parse() {
    let big = "x".repeat(1 << 20);
    let cases = [
        r#"{"content":[{"type":"text","text":"hi"}]}"#.to_owned(),
        r#"{"content":[],"isError":true}"#.to_owned(),
        r#"{"isError":false,"content":[]}"#.to_owned(),
        r#" { "isError" : true } "#.to_owned(),
        r#"{"isError":null}"#.to_owned(),
        r#"{"isError":"true"}"#.to_owned(),
        r#"{"isError":true,"isError":false}"#.to_owned(),
        r#"{"isError":true}"#.to_owned(),
        // Nested or quoted: not the result's own flag.
        r#"{"structuredContent":{"isError":true},"content":[]}"#.to_owned(),
        r#"{"content":[{"type":"text","text":""isError":true"}]}"#.to_owned(),
        r#"{"a":"\","isError":true}"#.to_owned(),
        r#"{"a":[1,{"b":[]},"]}"],"n":-1.5e3,"t":true,"isError":true}"#.to_owned(),
        format!(r#"{{"content":[{{"type":"text","text":"{big}"}}],"isError":true}}"#),
        format!(r#"{{"content":[{{"type":"text","text":"{big}"}}]}}"#),
        "{}".to_owned(),
        "[]".to_owned(),
        r#"{"isError":tru"#.to_owned(),
        "".to_owned(),
    ];
    for raw in &cases {
        assert_eq!(
            ResultView::of(raw).is_error,
            by_serde(raw),
            "{}",
            raw.chars().take(80).collect::<String>()
        );
    }
    // The big ones are decided by the scan, without the fallback.
    for (case, flag) in [(&cases[12], true), (&cases[13], false)] {
        let [found] = scan::top_level(case.as_bytes(), [b"isError"]).unwrap();
        assert_eq!(found.is_some_and(|r| &case.as_bytes()[r] == b"true"), flag);
    }
}

#[test]
fn what_a_client_can_answer_is_kept_small() {
    assert_eq!(
        answerable(
            r#"{"roots":{"listChanged":true},"experimental":{"x":[1,2,3]},"elicitation":{"form":{}}}"#
        ),
        r#"{"elicitation":{"form":{}},"roots":{}}"#
    );
    assert_eq!(answerable("{}"), "{}");
    assert_eq!(answerable("not json"), "{}");
    let huge = format!(
        r#"{{"sampling":{{}},"experimental":"{}"}}"#,
        "x".repeat(1 << 20)
    );
    assert_eq!(answerable(&huge), r#"{"sampling":{}}"#);
}

#[test]
fn a_result_read_with_its_line_is_viewed_as_a_result_read_alone() {
    assert_eq!(
        crate::jsonrpc::RESULT_MEMBERS[1],
        RESULT_TYPE_KEY.as_bytes()
    );
    for result in [
        r#"{"content":[],"isError":true}"#,
        r#"{"isError":false,"resultType":"input_required","inputRequests":{}}"#,
        r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}},"content":[]}"#,
        r#"{"resultType":"complete"}"#,
        r#"[1]"#,
    ] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":3,"result":{result}}}"#);
        let scanned = crate::jsonrpc::result_response(line.as_bytes()).unwrap();
        let kept = crate::jsonrpc::RawJson::in_line(line.clone().into_bytes(), scanned).unwrap();
        assert_eq!(kept.members().is_some(), result.starts_with('{'));
        let (read, alone) = (ResultView::of_reply(&kept), ResultView::of(result));
        assert_eq!(
            (read.is_error, read.kind),
            (alone.is_error, alone.kind),
            "{result}"
        );
        for era in [Era::Legacy, Era::Modern] {
            assert_eq!(
                for_client_viewed(kept.get(), era, &read),
                for_client_viewed(result, era, &alone),
                "{result}"
            );
        }
    }
}

/// What a client says of itself is kept bounded at the edge: cut to the limit with "…",
/// control characters as spaces, empty as none.
#[test]
fn a_clients_self_description_is_bounded() {
    let huge = "x".repeat(1 << 20);
    let kept = client_label(Some(huge), MAX_CLIENT_NAME).unwrap();
    assert_eq!(kept.chars().count(), MAX_CLIENT_NAME);
    assert!(kept.ends_with('…'));
    assert_eq!(
        client_label(Some("claude-code\r\nINJECTED".into()), MAX_CLIENT_NAME).as_deref(),
        Some("claude-code  INJECTED")
    );
    assert_eq!(client_label(Some(" \n ".into()), 10), None);
    assert_eq!(
        client_label(Some("é".repeat(70)), MAX_CLIENT_VERSION)
            .unwrap()
            .chars()
            .count(),
        64
    );
    assert_eq!(client_label(None, 10), None);
}

/// An `Mcp-Param-*` number is compared exactly when the argument is an integer: 2^53 and
/// 2^53 + 1 are different numbers, whatever a float says.
#[test]
fn integer_parameters_are_compared_as_integers() {
    let v = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap();
    assert!(!number_matches("9007199254740992", &v("9007199254740993")));
    assert!(!number_matches(
        "9007199254740993.0",
        &v("9007199254740992")
    ));
    assert!(number_matches("9007199254740993", &v("9007199254740993")));
    assert!(number_matches(" 42 ", &v("42")));
    assert!(!number_matches("42.5", &v("42")));
    assert!(number_matches("2.5", &v("2.5")));
    assert!(number_matches("1e3", &v("1000.0")));
    assert!(!number_matches("x", &v("1")));
    assert!(!number_matches("1", &v("\"1\"")));
}

/// A client of a modern server sends the routing headers of the message it read once, and the
/// `Mcp-Param-*` headers only for a tool whose arguments it learnt are annotated.
#[test]
fn a_messages_headers_come_from_its_envelope_read_once() {
    let msg = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"caf\u00e9","arguments":{"region":"eu","n":1}}}"#;
    let env = crate::jsonrpc::Envelope::parse(msg).unwrap();
    let h = routing_headers(&env);
    assert!(
        h.contains(&("mcp-method", "tools/call".to_owned())),
        "{h:?}"
    );
    let name = h
        .iter()
        .find(|(n, _)| *n == "mcp-name")
        .map(|(_, v)| v.clone());
    assert_eq!(
        name.as_deref().and_then(decode_header_value).as_deref(),
        Some("café")
    );
    let read = crate::jsonrpc::Envelope::parse(
        br#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a"}}"#,
    )
    .unwrap();
    assert!(routing_headers(&read).contains(&("mcp-name", "file:///a".to_owned())));

    let params = ParamHeaders::default();
    assert!(params.of(&env).is_empty(), "nothing learnt yet");
    params.learn(
        serde_json::json!({"jsonrpc":"2.0","id":9,"result":{"tools":[
            {"name":"café","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}},
            {"name":"plain","inputSchema":{"type":"object"}}
        ]}})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(
        params.of(&env),
        vec![("Mcp-Param-Region".to_owned(), "eu".to_owned())]
    );
    let plain = crate::jsonrpc::Envelope::parse(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"plain","arguments":{"region":"eu"}}}"#).unwrap();
    assert!(params.of(&plain).is_empty(), "a tool without annotations");
}

/// One parse decides (a property over random params): whatever the spelling of the keys (plain,
/// `\u` escapes) and however often they appear, `Members::of` either refuses params that give
/// `name`, `uri` or `arguments` twice, or reads exactly the one value each has — the value the
/// gateway's own reading (the map it forwards the call from) finds too.
#[test]
fn members_read_once_refuse_a_key_given_twice_in_any_spelling() {
    let spellings: [(&str, &str); 7] = [
        ("\"name\"", "name"),
        ("\"na\\u006de\"", "name"),
        ("\"uri\"", "uri"),
        ("\"\\u0075ri\"", "uri"),
        ("\"arguments\"", "arguments"),
        ("\"other\"", "other"),
        ("\"_meta\"", "_meta"),
    ];
    let mut rng = fastrand::Rng::with_seed(0x6a7e_4011);
    let (mut refused, mut read) = (0, 0);
    for case in 0..2000 {
        let n = rng.usize(1..7);
        let picked: Vec<(&str, &str, String)> = (0..n)
            .map(|i| {
                let (spelled, key) = spellings[rng.usize(..spellings.len())];
                let value = match key {
                    "arguments" => format!("{{\"x\":{i}}}"),
                    "_meta" => "{}".to_owned(),
                    _ => format!("\"v{case}-{i}\""),
                };
                (spelled, key, value)
            })
            .collect();
        let text = format!(
            "{{{}}}",
            picked
                .iter()
                .map(|(s, _, v)| format!("{s}:{v}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let raw = RawValue::from_string(text.clone()).unwrap();
        let count = |k: &str| picked.iter().filter(|(_, key, _)| *key == k).count();
        let twice = ["name", "uri", "arguments"].iter().any(|k| count(k) > 1);
        match Members::of(Some(&raw)) {
            Err(why) => {
                assert!(twice, "{text}: refused without a key given twice: {why}");
                refused += 1;
            }
            Ok(m) => {
                assert!(!twice, "{text}: a key given twice was read");
                let one = |k: &str| {
                    picked
                        .iter()
                        .find(|(_, key, _)| *key == k)
                        .map(|(_, _, v)| v.clone())
                };
                let string =
                    |v: Option<String>| v.map(|v| serde_json::from_str::<String>(&v).unwrap());
                assert_eq!(m.name, string(one("name")), "{text}");
                assert_eq!(m.uri, string(one("uri")), "{text}");
                assert_eq!(m.arguments.map(str::to_owned), one("arguments"), "{text}");
                // The gateway forwards the call from a map of the same params: the same name.
                let forwarded: BTreeMap<String, Box<RawValue>> =
                    serde_json::from_str(&text).unwrap();
                let name = forwarded
                    .get("name")
                    .map(|v| serde_json::from_str::<String>(v.get()).unwrap());
                assert_eq!(m.name, name, "{text}");
                read += 1;
            }
        }
    }
    assert!(
        refused > 100 && read > 100,
        "both kinds of case were drawn: {refused} / {read}"
    );
}
