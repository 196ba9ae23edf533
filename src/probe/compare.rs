//! `gatehouse test ID --compare` (and the form's "Compare with the sandbox off"): the server
//! started twice on its own — confined as its entry says (the default sandbox when it says
//! `off`), then with the sandbox off — and the difference said in a sentence. It tells the
//! sandbox's doing apart from the server's own failures when nothing the server says names a
//! refusal (what `sandbox::blame` cannot see).

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::{probe, ProbeReport};
use crate::config::{ServerConfig, Transport};
use crate::sandbox::{Level, SandboxPolicy};
use crate::secrets::SecretSource;

/// Both runs and what differs.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Confined (as its entry says, or the default sandbox).
    pub confined: ProbeReport,
    /// With the sandbox off.
    pub unconfined: ProbeReport,
    /// The difference in a sentence.
    pub difference: String,
    /// Both runs were ready.
    pub ok: bool,
}

/// Probes `server` confined and unconfined (one after the other), and compares.
pub async fn compare(
    id: &str,
    server: ServerConfig,
    secrets: Arc<dyn SecretSource>,
    timeout: Duration,
    from: Option<&super::FromStore>,
) -> Result<Comparison, String> {
    let Transport::Stdio(t) = &server.transport else {
        return Err(format!(
            "{id} is a remote server: it runs on another machine, and no sandbox of Gatehouse's applies to it"
        ));
    };
    let mut confined = server.clone();
    let mut unconfined = server.clone();
    if let (Transport::Stdio(c), Transport::Stdio(u)) =
        (&mut confined.transport, &mut unconfined.transport)
    {
        if !t.sandbox.confines() {
            c.sandbox = SandboxPolicy::default();
        }
        u.sandbox = SandboxPolicy::of(Level::Off);
    }
    let a = probe(id, confined, secrets.clone(), timeout, from).await;
    let b = probe(id, unconfined, secrets, timeout, from).await;
    let difference = difference(&a, &b);
    Ok(Comparison {
        ok: a.ok && b.ok,
        confined: a,
        unconfined: b,
        difference,
    })
}

/// One line for each run: `ready, 9 tools (1.2 s)` or `failed: …`.
pub fn line(r: &ProbeReport) -> String {
    let secs = r.elapsed_ms as f64 / 1000.0;
    if r.ok {
        format!(
            "ready, {} tool{} ({secs:.1} s)",
            r.tools.len(),
            if r.tools.len() == 1 { "" } else { "s" }
        )
    } else {
        format!(
            "failed ({secs:.1} s): {}",
            r.error.as_deref().unwrap_or("no reason given")
        )
    }
}

fn difference(confined: &ProbeReport, unconfined: &ProbeReport) -> String {
    let left: Vec<String> = confined
        .sandbox
        .iter()
        .flat_map(|s| s.left_out_why.iter().map(|l| l.line()))
        .collect();
    let mut left = if left.is_empty() {
        String::new()
    } else {
        format!(" Left out: {}", left.join("; "))
    };
    // What its network fence refused while it started: each named, with the line that allows it.
    let refused: Vec<String> = confined
        .sandbox
        .iter()
        .filter_map(|s| s.network.as_ref())
        .flat_map(|n| &n.refused)
        .map(|r| {
            let host = crate::text::reveal(&r.host);
            format!(
                "{host}:{} ({}) — allow it with \"network\": {{\"allow\": [\"{host}:{}\"]}}",
                r.port, r.why, r.port
            )
        })
        .collect();
    if !refused.is_empty() {
        left.push_str(&format!(" The sandbox refused: {}.", refused.join("; ")));
    }
    match (confined.ok, unconfined.ok) {
        (true, true) if confined.tools.len() == unconfined.tools.len() => format!(
            "No difference at start: it runs under the sandbox. A call may still be refused something the sandbox closes; Activity and the call's error say so when it is.{left}"
        ),
        (true, true) => format!(
            "It runs both ways, but lists {} tools confined and {} unconfined.{left}",
            confined.tools.len(),
            unconfined.tools.len()
        ),
        (false, true) => format!(
            "The sandbox stops it: it runs with the sandbox off and fails confined.{left} Open what it needs with \"sandbox\": {{\"write\": [PATH]}} (or \"read\") in the entry, or set \"sandbox\": \"off\"."
        ),
        (true, false) => "It runs confined but not unconfined: the difference is not the sandbox's (run it again: a server that fails intermittently shows this).".to_owned(),
        (false, false) => "It fails both ways: the cause is not the sandbox (see the error above).".to_owned(),
    }
}
