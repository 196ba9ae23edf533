//! `gatehouse rules`: the config's argument rules — tried against the recorded Activity before
//! they are trusted (`test`), listed by their names in the config (`list`), added to a server's
//! tool (`add`, checked against its definition) and removed by name (`remove`).

use gatehouse::control::{ControlClient, Request};
use gatehouse::hub::ListedRule;

use crate::args::RulesCmd;
use crate::ask::ask;
use crate::print;

/// One line per subcommand.
pub async fn run(client: &ControlClient, cmd: RulesCmd) -> Result<(), String> {
    match cmd {
        RulesCmd::Test(a) => test(client, a).await,
        RulesCmd::List { json } => list(client, json).await,
        RulesCmd::Add {
            server,
            tool,
            rule,
            client: profile,
        } => add(client, (server, tool), profile, rule).await,
        RulesCmd::Remove { at } => remove(client, at).await,
    }
}

async fn test(client: &ControlClient, a: crate::args::RulesTestArgs) -> Result<(), String> {
    let config = match a.config {
        // The hub reads it: the path is made absolute here, where it was typed.
        Some(p) => Some(std::path::absolute(&p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => None,
    };
    let since_ms = gatehouse::logs::now_ms().saturating_sub(a.since.as_millis() as u64);
    let scope = gatehouse::hub::ReplayScope {
        server: a.server,
        tool: a.tool,
        since_ms,
        config,
    };
    let report: gatehouse::hub::RulesReport = ask(client, Request::RulesTest(scope)).await?;
    if a.json {
        for w in &report.warnings {
            tell!("warning: {w}");
        }
        print::json(&report.calls);
    } else {
        print::rules_report(&report);
    }
    Ok(())
}

async fn list(client: &ControlClient, json: bool) -> Result<(), String> {
    let rules: Vec<ListedRule> = ask(client, Request::Rules).await?;
    if json {
        print::json(&rules);
    } else if rules.is_empty() {
        say!("No argument rules: calls are decided by the flags, the default and your answers.");
    } else {
        print_list(&rules);
    }
    Ok(())
}

async fn add(
    client: &ControlClient,
    (server, tool): (String, String),
    profile: Option<String>,
    rule: String,
) -> Result<(), String> {
    let value: serde_json::Value =
        serde_json::from_str(&rule).map_err(|e| format!("the rule is not JSON: {e}"))?;
    let rule = gatehouse::config::rules::Rule::read(&value)?;
    let warnings: Vec<String> = ask(
        client,
        Request::AddRule {
            server,
            tool,
            client: profile,
            rule,
        },
    )
    .await?;
    for w in warnings {
        tell!("warning: {w}");
    }
    say!("added; see `gatehouse rules list`, and try it with `gatehouse rules test`");
    Ok(())
}

async fn remove(client: &ControlClient, at: String) -> Result<(), String> {
    let _: Vec<ListedRule> = ask(
        client,
        Request::RemoveRule {
            at: at.clone(),
            rule: None,
        },
    )
    .await?;
    say!("removed {at}");
    Ok(())
}

/// The rules, one per line with its name in the config.
pub fn print_list(rules: &[ListedRule]) {
    if rules.is_empty() {
        return;
    }
    say!("");
    say!("RULES (in the config; remove one with `gatehouse rules remove NAME`)");
    for r in rules {
        say!(
            "{:<48} {}",
            gatehouse::text::reveal(&r.at),
            gatehouse::text::reveal(&r.text)
        );
    }
}
