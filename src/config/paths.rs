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

/// Splits a pasted command line into program and arguments with the shell's quoting rules —
/// the inverse of [`command_line`]: whitespace separates words; `'…'` is literal; `"…"` keeps
/// spaces and takes `\"`, `\\`, `\$` and `` \` `` as escapes; a backslash outside quotes
/// escapes the next character. Nothing is expanded (no `$VAR`, no globs).
pub fn split_command_line(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => word.push(x),
                        None => return Err("a single quote (') is not closed".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => word.push(x),
                            Some(x) => {
                                word.push('\\');
                                word.push(x);
                            }
                            None => return Err("a double quote (\") is not closed".into()),
                        },
                        Some(x) => word.push(x),
                        None => return Err("a double quote (\") is not closed".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(x) => word.push(x),
                    None => return Err("the line ends with a lone backslash".into()),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A pasted command line splits the way a shell would, and splitting what `command_line`
    /// quoted gives the words back.
    #[test]
    fn command_lines_split_like_a_shell_and_round_trip() {
        assert_eq!(
            split_command_line("npx -y @scope/pkg  /home/me/my notes").unwrap(),
            ["npx", "-y", "@scope/pkg", "/home/me/my", "notes"]
        );
        assert_eq!(
            split_command_line(r#"uvx 'a b' "c \"d\" $HOME" e\ f"#).unwrap(),
            ["uvx", "a b", "c \"d\" $HOME", "e f"]
        );
        assert!(split_command_line("npx 'oops").is_err());
        assert!(split_command_line("npx \"oops").is_err());
        for words in [
            vec![
                "node",
                "server.js",
                "--dir",
                "/tmp/a b",
                "it's",
                "$x",
                "\\back",
            ],
            vec!["plain"],
        ] {
            let line = command_line(words.iter().copied());
            assert_eq!(split_command_line(&line).unwrap(), words, "{line}");
        }
    }
}
