//! The command line: every verb and flag, as clap reads them.

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "gatehouse",
    version,
    about = "Your local control point for MCP servers"
)]
pub struct Cli {
    /// Control socket of the hub (default: $GATEHOUSE_CONTROL, else $XDG_RUNTIME_DIR/gatehouse/control.sock)
    #[arg(long, global = true, value_name = "PATH")]
    pub control: Option<PathBuf>,
    #[command(subcommand)]
    pub cmd: Cmd,
}

// Parsed once per run: the size of `add`'s variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum Cmd {
    /// Run the hub until SIGINT/SIGTERM, then stop every server
    Serve {
        /// Config file (default: the platform config dir's gatehouse/gatehouse.json)
        #[arg(long, value_name = "PATH")]
        config: Option<PathBuf>,
        /// Data dir for logs and state (default: the platform data dir's gatehouse/)
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Gateway address, overriding the config's gateway.listen (loopback only)
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// Serve one MCP client on stdin/stdout instead of HTTP (logs go to stderr)
        #[arg(long)]
        stdio: bool,
        /// Deny calls that need approval at once instead of waiting for an approver
        #[arg(long)]
        deny_unattended: bool,
    },
    /// List calls and changes (of a server's prompts, instructions or apps) waiting for
    /// approval (or revoke remembered approvals with --forget)
    Approvals(ApprovalsArgs),
    /// List every pin: each server's tools, prompts, instructions and apps as first seen or
    /// last approved
    Pins {
        #[arg(long)]
        json: bool,
    },
    /// Allow a waiting call, or approve a held change (`chg-…`: it becomes the pin)
    Approve {
        id: String,
        /// once (default), session (this client session, this tool), always (this definition),
        /// exact (this exact call — the same arguments — for this session) or exact-always
        /// (this exact call with this definition, until revoked)
        #[arg(long, default_value = "once")]
        scope: gatehouse::approval::Scope,
        /// The call's `digest` as `approvals --json` gave it: the answer is refused unless the
        /// call is exactly the one that was read
        #[arg(long, value_name = "DIGEST")]
        digest: Option<String>,
    },
    /// Argument rules: try them against the recorded Activity before trusting them
    Rules {
        #[command(subcommand)]
        cmd: RulesCmd,
    },
    /// Manage secrets in the OS keychain (values never on the command line)
    Secret {
        #[command(subcommand)]
        cmd: SecretCmd,
    },
    /// Sign in to (or out of) a remote server that uses OAuth; tokens stay in the OS keychain
    Auth {
        #[command(subcommand)]
        cmd: AuthCmd,
    },
    /// Show recent routed calls: decision, who decided, duration, outcome
    Activity(ActivityArgs),
    /// Deny a waiting call (the client gets an error result with the reason), or keep the
    /// approved version over a held change (`chg-…`)
    Deny {
        id: String,
        #[arg(long)]
        reason: Option<String>,
        /// As for `approve`
        #[arg(long, value_name = "DIGEST")]
        digest: Option<String>,
    },
    /// Bridge a stdio-only MCP client (e.g. Claude Desktop) to the running hub
    Connect {
        /// Gateway URL (default: asked from the running hub, with its token)
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// Connect as this client profile (its token and tool set)
        #[arg(long, value_name = "ID")]
        client: Option<String>,
    },
    /// Client profiles: each AI client's own token and tool set (`clients` lists them)
    Clients {
        #[command(subcommand)]
        cmd: Option<ClientsCmd>,
        #[arg(long)]
        json: bool,
    },
    /// Show every server's status
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Start a server
    Start { id: String },
    /// Stop a server
    Stop { id: String },
    /// Restart a server, or every server with --all (also clears a `failed` state)
    Restart {
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<String>,
        /// Restart every server
        #[arg(long)]
        all: bool,
    },
    /// Pin a server's `npx`/`uvx` package to its exact version, or (--update) move it to the
    /// newest one; shows when a newer version is available
    Pin {
        id: String,
        /// Show what moving to the newest version past the cool-down (`registry.min_age_days`)
        /// changes — every package of its tree, old → new, with its age — without writing
        #[arg(long)]
        update: bool,
        /// With --update: take it (installed into the store, then written; its tools are
        /// reviewed at the next start)
        #[arg(long, requires = "update")]
        yes: bool,
        /// With --update: take the newest version even inside the cool-down
        #[arg(long, requires = "update")]
        now: bool,
        /// The config file when no hub is running (default: the platform config)
        #[arg(long, value_name = "PATH")]
        config: Option<PathBuf>,
    },
    /// The MCP Registry: find servers and see what they need
    Registry {
        #[command(subcommand)]
        cmd: RegistryCmd,
    },
    /// Add a server: `add ID [OPTIONS] -- COMMAND [ARGS...]`, `add ID --url URL`, or
    /// `add [ID] --registry NAME[@VERSION]`
    Add(AddArgs),
    /// Remove a server from the config (and stop it)
    Remove {
        id: String,
        #[arg(long, value_name = "PATH")]
        config: Option<PathBuf>,
    },
    /// Enable a server (kept in the config) and start it
    Enable {
        id: String,
        #[arg(long, value_name = "PATH")]
        config: Option<PathBuf>,
    },
    /// Disable a server (kept in the config) and stop it
    Disable {
        id: String,
        #[arg(long, value_name = "PATH")]
        config: Option<PathBuf>,
    },
    /// Start a server on its own and report what it offers: `test ID` or `test -- COMMAND [ARGS...]`
    Test(TestArgs),
    /// Show a server's recent stderr and Gatehouse's notes about it
    Logs {
        id: String,
        /// Keep printing new lines
        #[arg(long, short)]
        follow: bool,
        /// How many recent lines to show (default: all kept, up to 1000)
        #[arg(long, short = 'n')]
        lines: Option<usize>,
    },
    /// List the tools of running servers with their exposed names
    Tools(ToolsArgs),
    /// Re-read the config file of the running hub
    Reload,
    /// Import servers from Claude Desktop, Claude Code, Cursor, VS Code or a Gremia manifest
    Import(ImportArgs),
    /// Print the config that connects a client to Gatehouse (or merge it into the client's file)
    ClientConfig(ClientConfigArgs),
    /// Changes to the AI clients' files made outside Gatehouse (a hook, a task run when a folder
    /// opens, a server entry): list them, put a file back, or keep the change
    ClientFiles {
        #[command(subcommand)]
        cmd: Option<ClientFilesCmd>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub enum ClientFilesCmd {
    /// Put back what the file held before the change, byte for byte
    Restore { path: PathBuf },
    /// Keep the change: dismiss the alert
    Ack { path: PathBuf },
}

/// `approvals`: waiting calls, remembered answers, or forgetting them.
#[derive(Args)]
pub struct ApprovalsArgs {
    #[arg(long)]
    pub json: bool,
    /// Revoke "session" and "always" approvals of SERVER or SERVER__TOOL
    #[arg(long, value_name = "SERVER[__TOOL]")]
    pub forget: Option<String>,
    /// List the remembered answers ("always", "session", "exact", "exact-always") instead of
    /// waiting calls
    #[arg(long, conflicts_with = "forget")]
    pub grants: bool,
}

/// `activity`: which calls, and how they are printed.
#[derive(Args)]
pub struct ActivityArgs {
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV (RFC 4180, with the two durations; cells a spreadsheet would run are
    /// written as text) — e.g. `gatehouse activity --csv --limit 100000 > calls.csv`
    #[arg(long)]
    pub csv: bool,
    /// Only calls whose decision is in this group
    #[arg(long, value_name = "GROUP", value_parser = gatehouse::activity::DecisionGroup::ALL.map(|g| g.as_str()))]
    pub decision: Option<String>,
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    #[arg(long, value_name = "ID")]
    pub server: Option<String>,
    /// Only the calls of this client profile (`default`: the gateway token's)
    #[arg(long, value_name = "ID")]
    pub client: Option<String>,
}

/// `tools`: whose tools, as seen by whom.
#[derive(Args)]
pub struct ToolsArgs {
    pub id: Option<String>,
    #[arg(long)]
    pub json: bool,
    /// List the server's tools again first (without restarting it)
    #[arg(long, requires = "id")]
    pub refresh: bool,
    /// Only what this client profile sees, with what a call from it does
    #[arg(long)]
    pub client: Option<String>,
}

/// `test`: one server started on its own.
#[derive(Args)]
pub struct TestArgs {
    pub id: Option<String>,
    /// How long it may take to be ready, in seconds
    #[arg(long, default_value_t = 30)]
    pub timeout: u64,
    /// The config file to find ID in (default: the platform config)
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
    /// Start it confined and with the sandbox off, and say the difference (prints a
    /// `confined: …` and an `unconfined: …` line; exit 0 when both run)
    #[arg(long)]
    pub compare: bool,
    /// A command not in the config yet, after `--`
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `import`: which client's servers, into which config.
#[derive(Args)]
pub struct ImportArgs {
    /// claude-desktop, claude-code, cursor, vscode, or a file (default: every client found)
    #[arg(long, value_name = "CLIENT|PATH")]
    pub from: Option<String>,
    /// The Gatehouse config to add them to (default: the platform config)
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Show what would be imported; write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Move credential-looking env/header values (*_TOKEN, *_KEY, *_SECRET, PASSWORD…) into the keychain
    #[arg(long)]
    pub move_secrets: bool,
    /// Import a server under another id (repeatable)
    #[arg(long = "rename", value_name = "OLD=NEW")]
    pub renames: Vec<String>,
    /// Import this project server although its client has not approved it (repeatable; by
    /// default a project's `.mcp.json` server Claude Code was never told to run is left out)
    #[arg(long = "include", value_name = "NAME")]
    pub include: Vec<String>,
}

/// `client-config`: the entry connecting a client, printed or merged into its file.
#[derive(Args)]
pub struct ClientConfigArgs {
    /// claude-desktop, claude-code, cursor or vscode
    pub target: String,
    /// Merge it into the client's file (a timestamped backup is kept)
    #[arg(long)]
    pub write: bool,
    /// With --write: also remove the client's entries for servers Gatehouse now runs
    #[arg(long)]
    pub replace_imported: bool,
    /// With --write: the client's file, if not in its usual place
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Use this client profile's token (and, for stdio clients, `connect --client ID`)
    #[arg(long, value_name = "ID")]
    pub client: Option<String>,
}

/// What `add` was given.
#[derive(Args)]
pub struct AddArgs {
    #[arg(required_unless_present = "registry")]
    pub id: Option<String>,
    /// A server from the MCP Registry, pinned to its exact version (latest unless given)
    #[arg(long, value_name = "NAME[@VERSION]", conflicts_with_all = ["url", "command"])]
    pub registry: Option<String>,
    /// A remote server's URL (instead of a command)
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// An environment variable for the server (repeatable)
    #[arg(long = "env", value_name = "K=V")]
    pub env: Vec<String>,
    /// An environment variable taken from a keychain secret (repeatable)
    #[arg(long = "secret-env", value_name = "K=SECRET_NAME")]
    pub secret_env: Vec<String>,
    /// A header for a remote server (repeatable)
    #[arg(long = "header", value_name = "K=V")]
    pub header: Vec<String>,
    /// A header taken from a keychain secret (repeatable)
    #[arg(long = "secret-header", value_name = "K=SECRET_NAME")]
    pub secret_header: Vec<String>,
    /// The server's working directory
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// ask: every call asks first; default: follow approval.default
    #[arg(long, value_name = "ask|default", default_value = "default")]
    pub approval: String,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// Leave an `npx`/`uvx` package unpinned (it then runs whatever version is newest)
    #[arg(long = "no-pin", action = ArgAction::SetFalse)]
    pub pin: bool,
    /// With --registry: allow this variable although it changes how a runtime loads code or
    /// where it fetches packages (repeatable; each is shown with its value first)
    #[arg(long = "allow-env", value_name = "NAME", requires = "registry")]
    pub allow_env: Vec<String>,
    /// The config file when no hub is running (default: the platform config)
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The command and its arguments, after `--`
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `add`'s sandbox flags.
#[derive(Args)]
pub struct SandboxArgs {
    /// How the local server is confined: default, strict or off
    #[arg(long = "sandbox", value_name = "default|strict|off")]
    pub level: Option<String>,
    /// A path the sandboxed server may read (repeatable)
    #[arg(long = "allow-read", value_name = "PATH")]
    pub read: Vec<String>,
    /// A path the sandboxed server may read and write (repeatable)
    #[arg(long = "allow-write", value_name = "PATH")]
    pub write: Vec<String>,
    /// Take the network away from the sandboxed server
    #[arg(long, conflicts_with = "allow_net")]
    pub no_network: bool,
    /// Fence its network: only this destination, HOST:PORT or *.DOMAIN:PORT, through its
    /// egress proxy (repeatable)
    #[arg(long = "allow-net", value_name = "HOST:PORT")]
    pub allow_net: Vec<String>,
}

#[derive(Subcommand)]
pub enum ClientsCmd {
    /// Add a client profile (and its token) seeing the given servers (all when absent)
    Add {
        id: String,
        /// Comma-separated server ids
        #[arg(long, value_delimiter = ',', value_name = "A,B")]
        servers: Option<Vec<String>>,
    },
    /// Remove a client profile: its token stops working and its sessions end
    Remove { id: String },
    /// A new token for a client profile: the old one stops working and its sessions end
    RotateToken { id: String },
}

#[derive(Subcommand)]
pub enum AuthCmd {
    /// Sign in: opens the authorization page in your browser (and prints it), waits for you
    Login { id: String },
    /// Sign out: revokes the tokens where the server offers it, deletes them from the keychain
    Logout { id: String },
}

#[derive(Subcommand)]
pub enum RulesCmd {
    /// Run the config's rules over the recorded calls: per call, the decision then and the one
    /// the rules would give now (allow, deny or ask); rules that can never match come first
    Test(RulesTestArgs),
    /// Every rule of the config, by its name in it (`servers.fs.tools.write_file.rules[0]`)
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a rule to a server's tool, e.g.
    /// `rules add fs write_file '{"allow": {"path": {"under": "~/notes"}}}'` (checked against the
    /// tool's definition first: a rule that can never match is refused); for every client, or
    /// with `--client ID` for that client profile only
    Add {
        server: String,
        tool: String,
        rule: String,
        /// For this client profile only (its `clients.ID.tools.SERVER__TOOL` rules)
        #[arg(long, value_name = "ID")]
        client: Option<String>,
    },
    /// Remove a rule by its name (see `rules list`)
    Remove { at: String },
}

/// `rules test`: which calls, and which config's rules.
#[derive(Args)]
pub struct RulesTestArgs {
    /// Only this server's calls and rules
    pub server: Option<String>,
    /// Only this tool's (the server's own name)
    pub tool: Option<String>,
    /// How far back: 30d (default), 12h, 90m, 2w…
    #[arg(long, default_value = "30d", value_parser = parse_duration)]
    pub since: std::time::Duration,
    /// Try this config's rules instead of the running one's
    #[arg(long, value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
    #[arg(long)]
    pub json: bool,
}

/// `30d`, `12h`, `90m`, `45s`, `2w`: a number and one unit.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n.parse().map_err(|_| {
        format!("\"{s}\" is not a duration: write a number and a unit, e.g. 30d, 12h, 90m")
    })?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" | "" => 86_400,
        "w" => 7 * 86_400,
        other => return Err(format!("unknown unit \"{other}\": use s, m, h, d or w")),
    };
    Ok(std::time::Duration::from_secs(n.saturating_mul(secs)))
}

#[derive(Subcommand)]
pub enum SecretCmd {
    /// Store a value: from stdin, or typed at a hidden prompt on a terminal
    Set { name: String },
    /// Remove a value
    Rm { name: String },
    /// List the secrets the config references: set or not, and which servers use each
    Ls {
        #[arg(long)]
        json: bool,
        /// Config to read when no hub is running (default: the platform config)
        #[arg(long, value_name = "PATH")]
        config: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub enum RegistryCmd {
    /// Servers whose name has TEXT (latest versions)
    Search {
        text: String,
        /// Every page, not only the first
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// One server: its packages and remotes, what it needs, the command it would run
    Show {
        name: String,
        /// A version (default: the latest)
        #[arg(long)]
        version: Option<String>,
        #[arg(long)]
        json: bool,
    },
}
