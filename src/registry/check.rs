//! What a registry or a package index says, checked by each ecosystem's own grammar before
//! anything is written: package names (npm, PyPI, OCI), exact versions (npm's semver, PEP 440,
//! an OCI digest), the runner arguments that may not change what runs or where it is fetched
//! from, environment variables that change how a runtime loads code or fetches packages, and
//! values that would read Gatehouse's own environment. Every refusal names what it refused.

/// An exact npm version: semver 2.0 `MAJOR.MINOR.PATCH`, with an optional pre-release and
/// build — never a range (`^1`, `~1.2`, `>=1`, `1.x`, `*`), a tag (`latest`) or an alias.
pub fn npm_version(v: &str) -> Result<(), String> {
    let (core, _) = v.split_once('+').unwrap_or((v, ""));
    let (core, pre) = match core.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (core, None),
    };
    let numbers: Vec<&str> = core.split('.').collect();
    let number = |n: &&str| {
        !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
            && (*n == "0" || !n.starts_with('0'))
            && n.len() <= 16
    };
    let ident = |s: &str| {
        !s.is_empty()
            && s.split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    };
    let build_ok = v.split_once('+').is_none_or(|(_, b)| ident(b));
    if numbers.len() == 3
        && numbers.iter().all(number)
        && pre.is_none_or(ident)
        && build_ok
        && v.len() <= 64
    {
        Ok(())
    } else {
        Err(format!(
            "\"{}\" is not an exact npm version (MAJOR.MINOR.PATCH): a range, tag, alias, URL or path would let the index choose what runs",
            crate::text::reveal(v)
        ))
    }
}

/// An npm package name: `name` or `@scope/name`, lower case, URL-safe, at most 214
/// characters — never a path, URL, git spec, alias (`npm:`), or a flag.
pub fn npm_name(n: &str) -> Result<(), String> {
    let part = |p: &str| {
        !p.is_empty()
            && !p.starts_with('.')
            && !p.starts_with('_')
            && !p.starts_with('-')
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._~".contains(&b))
    };
    let ok = n.len() <= 214
        && match n.strip_prefix('@') {
            Some(scoped) => matches!(scoped.split_once('/'), Some((s, p)) if part(s) && part(p)),
            None => part(n),
        };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "\"{}\" is not an npm package name (name or @scope/name, lower case): a path, URL, git spec, alias or flag there would run something else",
            crate::text::reveal(n)
        ))
    }
}

/// An exact PyPI version (PEP 440, public, normalised): `1.4.2`, `2025.4.25`, `1.0rc1`,
/// `1.0.post1`, `1!2.0` — never a specifier, a wildcard or a local version.
pub fn pypi_version(v: &str) -> Result<(), String> {
    let bad = || {
        Err(format!(
            "\"{}\" is not an exact PyPI version (PEP 440): a specifier, wildcard or local version would let the index choose what runs",
            crate::text::reveal(v)
        ))
    };
    let mut s = v;
    if let Some((epoch, rest)) = s.split_once('!') {
        if epoch.is_empty() || !epoch.bytes().all(|b| b.is_ascii_digit()) {
            return bad();
        }
        s = rest;
    }
    // The release: digit groups separated by dots, then optional a/b/rc N, .postN, .devN.
    let b = s.as_bytes();
    let mut at = 0;
    loop {
        let digits = b[at..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return bad();
        }
        at += digits;
        if b.get(at) == Some(&b'.') && b.get(at + 1).is_some_and(u8::is_ascii_digit) {
            at += 1;
            continue;
        }
        break;
    }
    let mut rest = &s[at..];
    for (prefix, digits_required) in [("a", true), ("b", true), ("rc", true)] {
        if let Some(r) = rest.strip_prefix(prefix) {
            let n = r.bytes().take_while(u8::is_ascii_digit).count();
            if digits_required && n == 0 {
                return bad();
            }
            rest = &r[n..];
            break;
        }
    }
    for prefix in [".post", ".dev"] {
        if let Some(r) = rest.strip_prefix(prefix) {
            let n = r.bytes().take_while(u8::is_ascii_digit).count();
            if n == 0 {
                return bad();
            }
            rest = &r[n..];
        }
    }
    if rest.is_empty() && v.len() <= 64 {
        Ok(())
    } else {
        bad()
    }
}

/// A PyPI project name (PEP 508): letters, digits, `.`, `_`, `-`, starting and ending with a
/// letter or digit.
pub fn pypi_name(n: &str) -> Result<(), String> {
    let b = n.as_bytes();
    let ok = !b.is_empty()
        && n.len() <= 128
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "\"{}\" is not a PyPI project name: a path, URL or option there would run something else",
            crate::text::reveal(n)
        ))
    }
}

/// An OCI image pinned to a digest: `registry/path/name@sha256:<64 hex>` (a tag may precede the
/// digest; the digest is what runs). The image name by the distribution spec's grammar.
pub fn oci_pinned(identifier: &str, version: &str) -> Result<String, String> {
    let (name, digest) = match identifier.split_once('@') {
        Some((n, d)) => (n.to_owned(), d.to_owned()),
        None if version.starts_with("sha256:") => (identifier.to_owned(), version.to_owned()),
        None => {
            return Err(format!(
                "its image {}:{} is a tag, which its registry can move: Gatehouse runs containers only pinned to a digest (@sha256:…)",
                crate::text::reveal(identifier),
                crate::text::reveal(version)
            ))
        }
    };
    let hex = digest.strip_prefix("sha256:").unwrap_or("");
    let name_only = name.split_once(':').map_or(name.as_str(), |(n, _)| n);
    let component = |c: &str| {
        !c.is_empty()
            && c.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
    };
    let mut parts = name_only.split('/');
    let first_ok = parts.next().is_some_and(|f| {
        component(f)
            || f.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-:".contains(&b))
    });
    if hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        && first_ok
        && parts.all(component)
        && !name_only.is_empty()
    {
        Ok(format!("{name_only}@sha256:{hex}"))
    } else {
        Err(format!(
            "\"{}\" is not an image pinned to a sha256 digest",
            crate::text::reveal(identifier)
        ))
    }
}

/// Runner options a registry may give (`runtimeArguments`): only those that change neither
/// what runs nor where it is fetched from. Anything else is refused, named.
fn allowed_runtime(runner: &str) -> &'static [&'static str] {
    match runner {
        "npx" => &["-y", "--yes", "-q", "--quiet", "--prefer-offline"],
        "uvx" => &["-q", "--quiet", "--isolated", "--offline"],
        "docker" | "podman" => &["-i", "--interactive", "--rm", "--init", "--read-only"],
        _ => &[],
    }
}

/// Checks a runner's options from a registry: each must be on the runner's allow-list
/// (`docker -e NAME` passes a variable the entry declares, by name only).
pub fn runtime_args(runner: &str, args: &[String]) -> Result<(), String> {
    let allowed = allowed_runtime(runner);
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if matches!(runner, "docker" | "podman") && matches!(a, "-e" | "--env") {
            match args.get(i + 1) {
                Some(name) if env_name(name).is_ok() && !name.contains('=') => {
                    i += 2;
                    continue;
                }
                _ => {
                    return Err(format!(
                        "its runtime argument {a} gives a value on the command line: only a variable's name may follow it"
                    ))
                }
            }
        }
        if !allowed.contains(&a) {
            return Err(format!(
                "its runtime argument \"{}\" for {runner} is refused: it could change what runs or where it is fetched from (allowed: {})",
                crate::text::reveal(a),
                allowed.join(", ")
            ));
        }
        i += 1;
    }
    Ok(())
}

/// A variable name: letters, digits and `_`, not starting with a digit.
pub fn env_name(n: &str) -> Result<(), String> {
    let ok = n
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && n.len() <= 128;
    if ok {
        Ok(())
    } else {
        Err(format!(
            "\"{}\" is not a variable name",
            crate::text::reveal(n)
        ))
    }
}

/// Why a variable changes how a runtime loads code or where packages are fetched from, if it
/// does: such a variable from a registry is refused unless the person allows it by name.
pub fn risky_env(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    let prefixes: &[(&str, &str)] = &[
        ("LD_", "it changes which libraries every program loads"),
        ("DYLD_", "it changes which libraries every program loads"),
        (
            "NODE_",
            "it changes how Node.js loads code or whom it trusts",
        ),
        (
            "NPM_CONFIG_",
            "it changes where npm fetches packages from and what it runs",
        ),
        ("PYTHON", "it changes how Python loads code"),
        ("UV_", "it changes where uv fetches packages from"),
        ("PIP_", "it changes where pip fetches packages from"),
        ("BUN_", "it changes how Bun loads code"),
        ("DENO_", "it changes how Deno loads code"),
        ("PERL5", "it changes how Perl loads code"),
        ("RUBY", "it changes how Ruby loads code"),
        ("GEM_", "it changes where Ruby loads gems from"),
        ("JAVA_TOOL_OPTIONS", "it changes how Java starts"),
        ("_JAVA_OPTIONS", "it changes how Java starts"),
        ("GIT_", "it changes what git runs"),
        (
            "DOCKER_",
            "it changes which container engine runs the server",
        ),
    ];
    let exact: &[(&str, &str)] = &[
        ("PATH", "it changes which programs run"),
        ("HOME", "it changes where every program reads its settings"),
        ("SHELL", "it changes which shell runs"),
        ("SSL_CERT_FILE", "it changes which certificates are trusted"),
        ("SSL_CERT_DIR", "it changes which certificates are trusted"),
        (
            "REQUESTS_CA_BUNDLE",
            "it changes which certificates are trusted",
        ),
        (
            "CURL_CA_BUNDLE",
            "it changes which certificates are trusted",
        ),
        ("HTTP_PROXY", "it sends the server's traffic elsewhere"),
        ("HTTPS_PROXY", "it sends the server's traffic elsewhere"),
        ("ALL_PROXY", "it sends the server's traffic elsewhere"),
        ("NO_PROXY", "it changes which traffic goes through a proxy"),
        ("GATEHOUSE_SERVER_DATA", "it is Gatehouse's own"),
        (
            "TMPDIR",
            "it moves the server's private temporary directory",
        ),
    ];
    exact
        .iter()
        .find(|(n, _)| upper == *n)
        .or_else(|| prefixes.iter().find(|(p, _)| upper.starts_with(p)))
        .map(|(_, why)| *why)
}

/// Variables any program may use to say how it runs that no runtime reads to load code or to
/// fetch: they pass from a registry whoever's they look like.
const HARMLESS_ENV: &[&str] = &[
    "LOG_LEVEL",
    "DEBUG",
    "NODE_ENV",
    "TZ",
    "LANG",
    "NO_COLOR",
    "FORCE_COLOR",
    "PORT",
    "HOST",
];

/// Why a variable a registry sets for package `package` is refused unless the person allows it
/// by name, if it is (an allow-list): a variable passes when it is the server's own — its
/// first word (`GITHUB` of `GITHUB_PERSONAL_ACCESS_TOKEN`) is a word of the package's name
/// (`ghcr.io/github/github-mcp-server`) — or one of a few harmless ones (`LOG_LEVEL`, `TZ`…);
/// any other may be one that the machine's software reads to load code or choose where it
/// fetches from (`BASH_ENV`, `GCONV_PATH`, `OPENSSL_CONF`, `XDG_CONFIG_HOME`, `CONTAINER_HOST`…),
/// and one that certainly is (`NODE_OPTIONS`, `LD_PRELOAD`…) says so.
pub fn foreign_env(name: &str, package: &str) -> Option<String> {
    if let Some(why) = risky_env(name) {
        return Some(why.to_owned());
    }
    let upper = name.to_ascii_uppercase();
    if HARMLESS_ENV.contains(&upper.as_str()) {
        return None;
    }
    const DOMAINS: &[&str] = &["IO", "COM", "ORG", "NET", "DEV", "AI", "WWW", "NPM", "PYPI"];
    let owners: Vec<String> = package
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 2)
        .map(str::to_ascii_uppercase)
        .filter(|w| !DOMAINS.contains(&w.as_str()))
        .collect();
    let first = upper.split('_').find(|w| !w.is_empty()).unwrap_or_default();
    if owners.iter().any(|w| w == first) {
        return None;
    }
    Some(format!(
        "it is not one of the package's own variables (they start with a word of its name: {}), and another program's variable can change how the machine's software loads code or where it fetches from",
        if owners.is_empty() { "none".to_owned() } else { owners.join(", ") }
    ))
}

/// A value from a registry must be literal text: `$VAR`, `${VAR}`, `${env:VAR}`, `{env:VAR}` or
/// `${input:…}` would read Gatehouse's (or a client's) environment when the server starts.
pub fn literal(name: &str, value: &str) -> Result<(), String> {
    let reads = value.contains('$') || value.contains("{env:") || value.contains("{input:");
    if reads {
        return Err(format!(
            "the registry's value for {name} ({}) would read a variable of Gatehouse's own environment when the server starts; give the value yourself with --env {name}=VALUE",
            crate::text::reveal(value)
        ));
    }
    if value
        .chars()
        .any(|c| c == '\0' || crate::text::is_hidden(c))
    {
        return Err(format!(
            "the registry's value for {name} holds hidden characters ({}); give the value yourself with --env {name}=VALUE",
            crate::text::reveal(value)
        ));
    }
    Ok(())
}

/// A registry server's name: reverse-DNS `namespace/name` (`io.github.owner/server`), printable.
pub fn server_name(n: &str) -> Result<(), String> {
    let ok = n.len() <= 200
        && n.split_once('/').is_some_and(|(ns, name)| {
            !ns.is_empty()
                && !name.is_empty()
                && ns
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-".contains(&b))
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the registry names a server \"{}\", which is not a registry name (namespace/name)",
            crate::text::reveal(n)
        ))
    }
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
