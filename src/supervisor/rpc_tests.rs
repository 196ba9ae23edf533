//! The JSON-RPC peer against an in-memory server: replies, garbage, closing, routing, bounds.
use super::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A peer wired to in-memory pipes: `their_in` is what the "server" reads, `their_out`
/// what it writes.
struct Rig {
    peer: Arc<RpcPeer>,
    their_in: tokio::io::DuplexStream,
    their_out: tokio::io::DuplexStream,
    inbound: mpsc::Receiver<Inbound>,
    notes: Arc<Mutex<Vec<String>>>,
    _tasks: tokio::task::JoinSet<()>,
}

fn setup() -> Rig {
    let (our_in, their_in) = tokio::io::duplex(1 << 16);
    let (their_out, our_out) = tokio::io::duplex(1 << 16);
    let (tx, rx) = mpsc::channel(8);
    let notes = Arc::new(Mutex::new(Vec::new()));
    let n2 = notes.clone();
    let mut tasks = tokio::task::JoinSet::new();
    let peer = RpcPeer::start(
        "t",
        our_in,
        our_out,
        CancellationToken::new(),
        Hooks {
            inbound: tx,
            trust_related: false,
            note: Arc::new(move |s| n2.lock().unwrap().push(s)),
            redactions: Arc::default(),
            updated: Arc::new(|_| {}),
        },
        &mut tasks,
    );
    Rig {
        peer,
        their_in,
        their_out,
        inbound: rx,
        notes,
        _tasks: tasks,
    }
}

#[tokio::test]
async fn request_reply_garbage_and_close() {
    let Rig {
        peer,
        their_in,
        mut their_out,
        mut inbound,
        notes,
        _tasks,
    } = setup();
    let p2 = peer.clone();
    let call = tokio::spawn(async move { p2.request("tools/list", None).await });
    let mut lines = BufReader::new(their_in).lines();
    let req = lines.next_line().await.unwrap().unwrap();
    assert_eq!(req, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    their_out
        .write_all(b"garbage\n{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[],\"x\":1.50}}\n")
        .await
        .unwrap();
    match call.await.unwrap().unwrap() {
        Reply::Result(r) => assert_eq!(r.get(), r#"{"tools":[],"x":1.50}"#),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        inbound.recv().await,
        Some(Inbound::ToolsListChanged)
    ));
    let notes_now = notes.lock().unwrap().clone();
    assert!(
        notes_now.iter().any(|n| n.contains("non-JSON")),
        "{notes_now:?}"
    );
    assert!(
        notes_now.iter().any(|n| n.contains("unknown id 99")),
        "{notes_now:?}"
    );

    // A server→client ping is answered by us.
    their_out
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"ping\"}\n")
        .await
        .unwrap();
    assert_eq!(
        lines.next_line().await.unwrap().unwrap(),
        r#"{"jsonrpc":"2.0","id":"s1","result":{}}"#
    );

    // In-flight calls fail as soon as the connection is closed.
    let p3 = peer.clone();
    let pending = tokio::spawn(async move { p3.request("slow", None).await });
    lines.next_line().await.unwrap().unwrap();
    peer.close("exited with code 1");
    let err = pending.await.unwrap().unwrap_err();
    assert_eq!(
        err.to_string(),
        "server \"t\" exited with code 1 while the request was in flight"
    );
    assert!(peer.request("x", None).await.is_err());
}

#[tokio::test]
async fn dropped_request_leaves_no_pending_entry() {
    let rig = setup();
    let peer = rig.peer.clone();
    let fut = peer.request("never", None);
    let _ = tokio::time::timeout(std::time::Duration::from_millis(20), fut).await;
    assert_eq!(peer.in_flight(), 0);
}

/// A message goes to the call the bridge related it to, else to the call whose progress
/// token it carries, else to the only call in flight; with several and nothing to tell them
/// apart, to none.
#[test]
fn a_message_is_routed_to_its_own_call_or_to_none() {
    let mut p = Pending::default();
    let is_call = |t: Target, want: &RouteTx| match t {
        Target::Call(s) => Arc::ptr_eq(&s.queued, &want.queued),
        _ => false,
    };
    assert!(matches!(p.target(None, None), Target::NoCall));
    let (a, _ra) = route_channel();
    p.routes.insert(1, a.clone());
    p.progress.insert("\"ta\"".into(), 1);
    assert!(is_call(p.target(None, None), &a), "the only call in flight");
    let (b, _rb) = route_channel();
    p.routes.insert(2, b.clone());
    assert!(matches!(p.target(None, None), Target::Ambiguous(2)));
    assert!(
        is_call(p.target(Some(2), None), &b),
        "related by the bridge"
    );
    assert!(
        is_call(p.target(None, Some("\"ta\"")), &a),
        "by progress token"
    );
    assert!(
        matches!(p.target(Some(9), None), Target::NoCall),
        "related to a call that is over: nobody"
    );
    p.remove(1);
    assert!(is_call(p.target(None, None), &b));
    assert!(matches!(p.target(None, Some("\"ta\"")), Target::NoCall));
}

/// One call's queue holds at most ROUTE_BYTES; what does not fit is refused, and reading
/// makes room again.
#[tokio::test]
async fn a_calls_queue_is_bounded_by_bytes() {
    let (tx, mut rx) = route_channel();
    let big = vec![b'x'; ROUTE_BYTES / 4];
    for _ in 0..4 {
        assert!(tx.try_send(CallEvent::Notification(big.clone())));
    }
    assert!(!tx.try_send(CallEvent::Notification(vec![b'y'])), "full");
    assert!(rx.recv().await.is_some());
    assert!(
        tx.try_send(CallEvent::Notification(big.clone())),
        "room again"
    );
}
