//! The local stand-in for the MCP Registry (the real one cannot be reached offline), and
//! pointing the app at it.

use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::support::{repo, Desktop};

/// The local stand-in for the MCP Registry (`tests/clients/registry_server.py`, speaking its
/// published API), stopped when dropped.
pub struct RegistryStandIn {
    child: Child,
    pub url: String,
}

impl RegistryStandIn {
    pub fn start() -> RegistryStandIn {
        let mut child = Command::new("python3")
            .arg(repo().join("tests/clients/registry_server.py"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("registry stand-in");
        let mut port = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
            &mut port,
        )
        .expect("port");
        RegistryStandIn {
            child,
            url: format!("http://127.0.0.1:{}", port.trim()),
        }
    }
}

impl Drop for RegistryStandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Desktop {
    /// Points the running app at `registry`, as a company points it at its own: the config's
    /// `registry.url`, then `reload`.
    pub fn point_at(&self, registry: &RegistryStandIn) {
        let mut cfg: Value =
            serde_json::from_str(&std::fs::read_to_string(&self.config_path).expect("config"))
                .expect("json");
        cfg["registry"] = json!({ "url": registry.url });
        std::fs::write(&self.config_path, cfg.to_string()).expect("config");
        let (code, out, err) = self.cli(&["reload"]);
        assert_eq!(code, 0, "{out}{err}");
    }
}
