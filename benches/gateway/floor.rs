//! The floor and the breakdown: what any proxy pays, and where Gatehouse's own share goes.
//!
//! The floor is a minimal MCP proxy in this process: an HTTP/1.1 server on loopback (the same
//! hyper the gateway uses, serving one handler with no router, as the gateway does) that reads each POST's `method`, `id` and `params`, sends the
//! request to one fixture child over its stdio (the same `RpcPeer` the hub uses: one pipe hop each
//! way) and answers with the child's result — no session, no token, no policy, no pins, no
//! activity row. The breakdown times, in this process and one at a time, the pieces of the
//! gateway's own path per call: the message read once, the catalog lookup, the policy with the
//! rules' layer, and the activity row handed to its thread.

use super::*;

/// Starts the floor proxy; its URL (and the child it forwards to, kept alive with it). Each
/// connection is served by hyper straight to the one handler, as the gateway's are: no router.
pub(super) async fn floor_proxy() -> (String, tokio::process::Child) {
    let (peer, child) = stdio_client(FIXTURE, &[], &[]).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let peer = peer.clone();
            let service = hyper::service::service_fn(
                move |req: axum::http::Request<hyper::body::Incoming>| {
                    let peer = peer.clone();
                    async move {
                        let body = axum::body::to_bytes(
                            axum::body::Body::new(req.into_body()),
                            usize::MAX,
                        )
                        .await
                        .unwrap_or_default();
                        let line = forward(&peer, &body).await;
                        Ok::<_, std::convert::Infallible>(axum::http::Response::new(
                            axum::body::Body::from(line),
                        ))
                    }
                },
            );
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
            );
        }
    });
    (url, child)
}

/// One request through the floor proxy: read, sent down the pipe, the result passed back.
async fn forward(peer: &RpcPeer, body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Req<'a> {
        #[serde(borrow)]
        id: &'a RawValue,
        method: &'a str,
        #[serde(borrow, default)]
        params: Option<&'a RawValue>,
    }
    let Ok(r) = serde_json::from_slice::<Req>(body) else {
        return r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#
            .into();
    };
    match peer.request(r.method, r.params).await {
        Ok(Reply::Result(res)) => {
            format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{}}}"#,
                r.id.get(),
                res.get()
            )
        }
        Ok(Reply::Error(e)) => format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{}}}"#,
            r.id.get(),
            e.get()
        ),
        Err(e) => format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32603,"message":{}}}}}"#,
            r.id.get(),
            serde_json::to_string(&e.to_string()).unwrap_or_default()
        ),
    }
}

/// An HTTP client of the floor proxy (the gateway's client, without session or token).
pub(super) fn floor_client(url: &str) -> HttpClient {
    HttpClient {
        http: HttpClient::http(),
        url: url.to_owned(),
        session: "floor".into(),
        modern: false,
    }
}

/// The gateway's own pieces per call, each timed alone over many rounds (µs per call).
pub(super) fn breakdown(gw: &Gateway, hub: &gatehouse::HubHandle) -> f64 {
    const N: usize = 100_000;
    let per = |t: Instant| t.elapsed().as_secs_f64() * 1e6 / N as f64;
    let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"hello 7","bytes":0}}}"#;
    let t = Instant::now();
    for _ in 0..N {
        std::hint::black_box(
            gateway::incoming::Incoming::parse(std::hint::black_box(body)).is_ok(),
        );
    }
    let parse = per(t);
    let t = Instant::now();
    for _ in 0..N {
        let catalog = gw.catalog();
        std::hint::black_box(catalog.lookup(std::hint::black_box("fx__echo")).is_some());
    }
    let lookup = per(t);
    let config = hub.config();
    let catalog = gw.catalog();
    let entry = catalog.lookup("fx__echo").expect("fx__echo listed");
    let args = RawValue::from_string(r#"{"text":"hello 7","bytes":0}"#.into()).expect("raw");
    let t = Instant::now();
    for _ in 0..N {
        let config = hub.config();
        // The call's one reading of its arguments (I-JSON checked), then the rules over it.
        let read = gatehouse::arguments::read(Some(std::hint::black_box(args.get())))
            .expect("readable arguments");
        let rule = gatehouse::approval::rules::for_call(
            &config,
            ("fx", "echo", entry.tool.raw.get()),
            None,
            read.as_ref(),
        );
        let v = hub.tool_verdict(&config, &entry.server, &entry.tool, None, rule.as_ref());
        std::hint::black_box(v.decision);
    }
    let policy = per(t);
    drop(config);
    // The server's answer read (its id found, the result stepped over, never decoded), the
    // client's line made from it, and the secrets masked in it (1 KiB of text).
    let padded = "x".repeat(1024);
    let answer = format!(
        r#"{{"id":7,"jsonrpc":"2.0","result":{{"content":[{{"type":"text","text":"hello 7{padded}"}}]}}}}"#
    );
    hub.redactions()
        .register("bench", "bench-secret-value-never-in-results");
    let t = Instant::now();
    for _ in 0..N {
        let line = std::hint::black_box(answer.as_bytes().to_vec());
        let scanned = gatehouse::jsonrpc::result_response(&line).expect("a result");
        let raw = gatehouse::jsonrpc::RawJson::in_line(line, scanned).expect("UTF-8");
        let out = hub.redactions().mask_line(raw.into_result_line("7"), &[]);
        std::hint::black_box(out);
    }
    let answered = per(t);
    let t = Instant::now();
    // Fewer than the log's queue holds, so that none is dropped (a dropped row costs less).
    const ROWS: usize = 2000;
    for i in 0..ROWS {
        hub.activity().record(gatehouse::activity::CallRecord {
            client: Some("bench".into()),
            ..gatehouse::activity::CallRecord::allowed(
                "s",
                "fx",
                "echo",
                format!(r#"{{"text":"hello {i}","bytes":0}}"#),
            )
        });
    }
    let record = t.elapsed().as_secs_f64() * 1e6 / ROWS as f64;
    println!(
        "the gateway's own pieces, each alone (µs per call): message read {parse:.2}, catalog lookup {lookup:.2}, arguments read, policy and rules {policy:.2}, answer read, made and masked (1 KiB) {answered:.2}, activity row handed over {record:.2}; sum {:.2}",
        parse + lookup + policy + answered + record
    );
    (parse + lookup + policy + answered + record) / 1e6
}
