//! The config loader: any file is loaded or refused with an error, never a panic, and a loaded
//! config's durations are within their bounds.
#![no_main]

use gatehouse::config::{Config, MAX_APPROVAL_TIMEOUT_SECS, MAX_CALL_TIMEOUT_SECS, MAX_STARTUP_TIMEOUT_SECS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(c) = Config::parse(text, std::path::Path::new("fuzz.json")) {
        assert!(c.approval.timeout_secs <= MAX_APPROVAL_TIMEOUT_SECS);
        for s in c.servers.values() {
            assert!(s.startup_timeout_secs <= MAX_STARTUP_TIMEOUT_SECS);
            assert!(s.call_timeout_secs <= MAX_CALL_TIMEOUT_SECS);
        }
    }
});
