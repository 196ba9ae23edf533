//! One actor per server: a cloneable [`ServerHandle`] plus a task that owns the connection (a
//! child's pipes or a remote bridge) and its state machine. Control goes through a queue;
//! status goes out through a `watch` channel and the event bus.
//!
//! - `status`: plain data ([`State`], [`ServerStatus`], [`ToolDef`], [`ExitInfo`]).
//! - `handle`: [`ServerHandle`], what callers hold.
//! - `actor`: the state machine and the restart decisions.
//! - `session`: one connection, its handshake task and the stop sequence.
//! - `launch`: starting a child process or a remote bridge.
//! - `handshake`, `rpc`, `remote`, `process`, `backoff`: the mechanics under them.

mod actor;
#[cfg(test)]
mod actor_tests;
pub mod backoff;
#[cfg(target_os = "linux")]
pub mod cgroup;
pub mod confine;
mod context;
#[cfg(test)]
pub(crate) mod fake;
mod handle;
pub mod handshake;
pub mod known;
pub(crate) mod launch;
pub mod process;
pub mod remote;
pub mod rpc;
mod session;
mod shared;
pub mod status;

pub use confine::SandboxRoots;
pub use context::{Context, Tuning};
pub use handle::{Followed, Gone, LogFollower, ServerHandle};
pub use handshake::PROTOCOL_VERSION;
pub use rpc::{CallError, Reply};
pub use status::{ExitInfo, ServerStatus, State, ToolDef, TransportKind};
