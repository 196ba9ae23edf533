//! Where things live by default, `~/` in configs, and command lines for people to read.

use std::path::PathBuf;

/// A command and its arguments as one shell-quoted line, for people to review (never executed).
pub fn command_line<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    parts
        .into_iter()
        .map(|p| {
            let plain = !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,~".contains(&b));
            if plain {
                p.to_owned()
            } else {
                format!("'{}'", p.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Expands a leading `~/` to the user's home directory (commands, args and cwd in configs).
pub fn expand_tilde(s: &str) -> String {
    match (s.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest).to_string_lossy().into_owned(),
        _ => s.to_owned(),
    }
}

/// The platform's default config file, e.g. `~/.config/gatehouse/gatehouse.json`.
pub fn default_config_path() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("gatehouse")
        .join("gatehouse.json")
}

/// The platform's default data dir, e.g. `~/.local/share/gatehouse`.
pub fn default_data_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("gatehouse")
}
