//! The gateway's Host guard: whatever a page or process sends as `Host`, only an exact loopback
//! authority with our port is accepted.
#![no_main]

use gatehouse::gateway::http::host_is_ours;
use libfuzzer_sys::fuzz_target;

const PORT: u16 = 8765;

fuzz_target!(|data: &[u8]| {
    let Ok(host) = std::str::from_utf8(data) else {
        return;
    };
    if host_is_ours(host, PORT) {
        let lower = host.to_ascii_lowercase();
        let name = lower.strip_suffix(":8765").unwrap_or_else(|| panic!("accepted without our port: {host:?}"));
        let loopback = name == "localhost"
            || name == "[::1]"
            || name
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback());
        assert!(loopback, "accepted a Host that is not loopback: {host:?}");
    }
});
