//! Reading what came back: an answer's messages (JSON or SSE), a call's outcome and text, a
//! hub's `status --json`.

use std::process::Command;

use super::{Served, GATEHOUSE};

/// The messages of an answer: one JSON object, or each SSE `data:`.
pub fn messages(text: &str) -> Vec<serde_json::Value> {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text).into_iter().collect();
    }
    text.split("\n\n")
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

pub fn last_message(text: &str) -> serde_json::Value {
    messages(text).pop().unwrap_or(serde_json::Value::Null)
}

/// What a call came back with: the result's text, or the error's message.
pub fn outcome(v: &serde_json::Value) -> String {
    match v.get("error") {
        Some(e) => format!("error: {}", e["message"].as_str().unwrap_or("")),
        None => {
            let text = v["result"]["content"][0]["text"].as_str().unwrap_or("");
            if v["result"]["isError"] == true {
                format!("error: {text}")
            } else {
                text.to_owned()
            }
        }
    }
}

/// The result's text (all text items), or the error's message, and whether it failed.
pub fn said(v: &serde_json::Value) -> (bool, String) {
    if let Some(e) = v.get("error") {
        return (true, e["message"].as_str().unwrap_or_default().to_owned());
    }
    let text = v["result"]["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|i| i["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    (v["result"]["isError"] == true, text)
}

/// `gatehouse status --json` of the hub `s` runs.
pub fn status_json(s: &Served) -> Vec<serde_json::Value> {
    serde_json::from_slice::<serde_json::Value>(
        &Command::new(GATEHOUSE)
            .args(["status", "--json"])
            .env("GATEHOUSE_CONTROL", &s.sock)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .as_array()
    .cloned()
    .unwrap()
}
