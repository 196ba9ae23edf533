//! `gatehouse`: the headless hub (`serve`) and the CLI verbs that talk to a running hub.
//! Exit codes: 0 ok; 1 a verb failed (unknown id, no hub running…); 2 bad usage or bad config.
//!
//! - `args`: the verbs and flags.
//! - `serve`: `serve` and `serve --stdio`.
//! - `verbs`: every verb that talks to a running hub (and `secret`, `connect`).
//! - `print`: how answers are shown to people.
//! - `import`: `import` and `client-config`.
//! - `manage`: `add`, `remove`, `enable`, `disable`, `restart --all`, `test`.

mod args;
mod import;
mod manage;
mod print;
mod serve;
mod verbs;

use std::process::ExitCode;

use clap::Parser;
use gatehouse::control;

use args::{Cli, Cmd};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("gatehouse: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let control_path = cli
        .control
        .clone()
        .unwrap_or_else(control::default_socket_path);
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
