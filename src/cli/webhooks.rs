//! `executor webhooks print`: the exact settings of each GitHub repository's webhook, and how to
//! forward deliveries to a laptop behind NAT with the GitHub CLI.

use clap::Subcommand;

use crate::config::Config;
use crate::web::webhooks::github::EVENTS;

#[derive(Debug, Subcommand)]
pub enum WebhooksCommand {
    /// Print the settings to enter on GitHub (Settings → Webhooks → Add webhook) for each repository
    /// with forge = "github": the URL, the content type, where the secret comes from, the events to
    /// tick; and the `gh webhook forward` command that brings deliveries to a machine GitHub cannot
    /// reach. Deliveries only make the runner look sooner: it still decides from its own observation.
    Print,
}

/// What GitHub's form calls each event `EVENTS` names, in the same order.
const EVENT_LABELS: &[&str] = &[
    "Check runs",
    "Check suites",
    "Workflow runs",
    "Statuses",
    "Pull requests",
    "Pull request reviews",
    "Pull request review comments",
    "Pull request review threads",
    "Issue comments",
];

pub fn run(config: &Config, command: WebhooksCommand, json: bool) -> anyhow::Result<()> {
    let WebhooksCommand::Print = command;
    let local = format!("http://{}:{}/webhooks/github", shown_host(&config.web.bind), config.web.port);
    let secret_env = &config.github.webhook_secret_env;
    let secret_set = std::env::var(secret_env).is_ok_and(|v| !v.is_empty());
    let repos: Vec<(&String, &String)> =
        config.repos.iter().filter(|(_, r)| r.forge == "github").map(|(name, r)| (name, &r.github)).collect();
    let forward = |full: &str| {
        format!(
            "gh webhook forward --repo={full} --events={} --url={local} --secret=\"${secret_env}\"",
            EVENTS.join(",")
        )
    };
    if json {
        let repos: Vec<serde_json::Value> = repos
            .iter()
            .map(|(name, full)| serde_json::json!({ "repo": name, "github": full, "forward": forward(full) }))
            .collect();
        return super::output::json(&serde_json::json!({
            "path": "/webhooks/github",
            "local_url": local,
            "content_type": "application/json",
            "secret_env": secret_env,
            "secret_set": secret_set,
            "events": EVENTS,
            "repos": repos,
        }));
    }
    if repos.is_empty() {
        say!("No repository under [repos] has forge = \"github\": there is nothing for GitHub to deliver.");
        return Ok(());
    }
    let lines = [
        "On GitHub, for each repository: Settings → Webhooks → Add webhook".to_string(),
        "  Payload URL       https://YOUR-HOST/webhooks/github".to_string(),
        format!("                    (a public address that forwards to {local}; see below)"),
        "  Content type      application/json".to_string(),
        format!("  Secret            the value of ${secret_env} (make one with `openssl rand -hex 32`)"),
        if secret_set {
            "                    (set in this environment)".to_string()
        } else {
            "                    NOT set in this environment: `executor serve` refuses deliveries".to_string()
        },
        "  SSL verification  Enable".to_string(),
        "  Events            Let me select individual events:".to_string(),
        format!("                    {}", EVENT_LABELS.join(", ")),
        "  Active            ticked".to_string(),
        String::new(),
        format!("`executor serve` receives them (with ${secret_env} set in its environment) and starts"),
        "`executor runner` when a delivery finds none running.".to_string(),
        String::new(),
        "A machine GitHub cannot reach (a laptop behind NAT): forward deliveries with the GitHub CLI"
            .to_string(),
        "(`gh extension install cli/gh-webhook`), one command per repository, while `executor serve` runs:"
            .to_string(),
    ];
    for line in lines {
        say!("{line}");
    }
    for (name, full) in &repos {
        say!("  # repos.{name}");
        say!("  {}", forward(full));
    }
    say!();
    say!("Behind a reverse proxy, pass only POST /webhooks/github to {local}");
    say!("and nothing else: the dashboard stays on loopback. Deliveries only make the runner look");
    say!("sooner; a lost one is caught by polling (runner.loop_interval, cron).");
    Ok(())
}

/// An IPv6 address in a URL is bracketed.
fn shown_host(bind: &str) -> String {
    if bind.contains(':') && !bind.starts_with('[') { format!("[{bind}]") } else { bind.to_string() }
}
