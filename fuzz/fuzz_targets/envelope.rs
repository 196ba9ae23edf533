//! The JSON-RPC envelope parser and the scan that reads a result response: any bytes a client or
//! server sends are parsed or refused, never a panic; a parsed message's raw members are slices
//! of the input, byte for byte; where both read a result response they agree, and a result the
//! scan hands over, put into another envelope, never changes that envelope's id.
#![no_main]

use gatehouse::jsonrpc::{result_response, Envelope};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let scanned = result_response(data);
    if let Ok(env) = Envelope::parse(data) {
        let text = String::from_utf8_lossy(data);
        for raw in [env.id, env.params, env.result, env.error].into_iter().flatten() {
            assert!(text.contains(raw.get()), "a raw member is not the input's own bytes");
        }
        if let (Some((id, range)), Some(result)) = (&scanned, env.result) {
            assert_eq!(&data[range.clone()], result.get().as_bytes(), "scan and serde disagree");
            assert_eq!(env.id.map(|i| i.get().to_owned()), Some(id.to_string()));
        }
        let _ = env.kind();
    }
    if let Some((_, range)) = scanned {
        let ours = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"c\",\"result\":{}}}",
            String::from_utf8_lossy(&data[range])
        );
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&ours) {
            assert_eq!(v["id"], "c", "a result changed its envelope's id");
        }
    }
});
