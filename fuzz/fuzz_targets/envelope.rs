//! The JSON-RPC envelope parser: any bytes a client or server sends are parsed or refused, never
//! a panic; a parsed message's raw members are slices of the input, byte for byte.
#![no_main]

use gatehouse::jsonrpc::Envelope;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(env) = Envelope::parse(data) {
        let text = String::from_utf8_lossy(data);
        for raw in [env.id, env.params, env.result, env.error].into_iter().flatten() {
            assert!(text.contains(raw.get()), "a raw member is not the input's own bytes");
        }
        let _ = env.kind();
    }
});
