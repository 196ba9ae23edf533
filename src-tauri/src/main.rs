//! `gatehouse-app`: the Gatehouse desktop app (everything is in the library's `run`).

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() -> std::process::ExitCode {
    gatehouse_app::run()
}
