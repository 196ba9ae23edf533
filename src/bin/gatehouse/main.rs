//! `gatehouse`: the headless hub (`serve`) and the CLI verbs that talk to a running hub.
//! Exit codes: 0 ok; 1 a verb failed (unknown id, no hub running…); 2 bad usage or bad config.
//!
//! - `args`: the verbs and flags.
//! - `serve`: `serve` and `serve --stdio`.
//! - `verbs`: every verb that talks to a running hub (and `secret`, `connect`).
//! - `print`: how answers are shown to people.
//! - `import`: `import` and `client-config`.
//! - `manage`: `add`, `remove`, `enable`, `disable`, `restart --all`, `test`.

/// `println!` for everything a verb prints: a reader that went away (`gatehouse tools | head`)
/// ends the command quietly with exit 0 instead of a panic (`print::out`).
macro_rules! say {
    () => {
        $crate::print::out("\n")
    };
    ($($arg:tt)*) => {
        $crate::print::out(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` for every warning and error a verb prints: through the same terminal-safe
/// printer as [`say!`] (`print::err`), so text a server or a client wrote cannot act on the
/// terminal from stderr either.
macro_rules! tell {
    ($($arg:tt)*) => {
        $crate::print::err(&format!("{}\n", format_args!($($arg)*)))
    };
}

mod args;
mod ask;
mod client_files;
mod import;
mod install;
mod manage;
mod pin;
mod pins;
mod print;
mod probe;
mod registry;
mod rules;
mod serve;
mod verbs;

use std::process::ExitCode;

use clap::Parser;
use gatehouse::control;

use args::{Cli, Cmd};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // One worker thread unless TOKIO_WORKER_THREADS says otherwise: the hub moves bytes between
    // processes, and on the gateway bench a second worker cost more CPU per call (wakeups
    // across threads) than it gave: 95 → 65–70 µs of the hub's CPU per call at one client,
    // 31 → 27.5 µs at 16, with equal or better throughput. Blocking work runs on the blocking
    // pool or its own thread (SQLite, keychain), never on the worker.
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(1);
    }
    let runtime = match builder.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            tell!("gatehouse: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // The hub binds the path its environment gives; a client also follows the hub's pointer
    // when its own environment lost the variables that give it (`control::locate`).
    let control_path = cli.control.clone().unwrap_or_else(|| match cli.cmd {
        Cmd::Serve { .. } => control::default_socket_path(),
        _ => control::locate::find_socket(),
    });
    runtime.block_on(async move {
        match cli.cmd {
            Cmd::Serve {
                config,
                data_dir,
                listen,
                stdio,
                deny_unattended,
            } => {
                let opts = serve::Options {
                    config,
                    data_dir,
                    listen,
                    stdio,
                    deny_unattended,
                    control_path,
                };
                serve::serve(opts).await
            }
            Cmd::Connect { url, client } => verbs::connect(url, client, control_path).await,
            verb => verbs::run(verb, control_path).await,
        }
    })
}
