//! Integration tests of the core against real processes: the fixture server built from this repo,
//! the `gatehouse` binary, and (ignored by default; `make test` runs them) real third-party peers.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// tests, benches and the fixture may panic
// Tests, benches and the fixture read top to bottom as the story they check or measure: the
// 100-line limit is for the product's own functions.
#![allow(clippy::too_many_lines)]

mod answers;
mod approvals;
mod approvals_hold;
mod apps;
mod bridges;
mod budgets;
mod calls;
mod capabilities;
mod cli;
mod client_files;
mod client_watch;
mod clients;
mod codex;
mod contracts;
mod contracts_gateway;
mod egress;
mod fairness;
mod gateway;
mod import;
mod import_clients;
mod import_own;
mod isolation;
mod liveness;
mod load;
mod local;
mod manage;
mod masked;
mod modern;
mod names;
mod oauth;
mod on_demand;
mod one_reading;
mod param_headers;
mod peers;
mod profiles;
mod real_clients;
mod records;
mod registry;
mod registry_trust;
mod remote;
mod rules;
mod said_pins;
mod sandbox;
mod sandbox_hostile;
mod sandbox_peers;
mod sandbox_reach;
mod secrets;
mod seen;
mod store;
mod streams;
mod supervisor;
mod support;
mod truthful;
