//! `executor webhooks print`: the exact settings of each GitHub repository's webhook (and how to forward
//! deliveries to a laptop behind NAT with the GitHub CLI), and of each GitLab project's.

use clap::Subcommand;

use crate::config::Config;
use crate::web::webhooks::github::EVENTS;
use crate::web::webhooks::gitlab::EVENTS as GITLAB_EVENTS;

#[derive(Debug, Subcommand)]
pub enum WebhooksCommand {
    /// Print the settings to enter on GitHub (Settings → Webhooks → Add webhook) for each repository
    /// with forge = "github": the URL, the content type, where the secret comes from, the events to
    /// tick; and the `gh webhook forward` command that brings deliveries to a machine GitHub cannot
    /// reach. For each forge = "gitlab" project, the same for GitLab's form (Settings → Webhooks).
    /// Deliveries only make the runner look sooner: it still decides from its own observation.
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
    let gitlab: Vec<(&String, &String)> =
        config.repos.iter().filter(|(_, r)| r.forge == "gitlab").map(|(name, r)| (name, &r.gitlab)).collect();
    if json {
        let mut answer = github(config, true)?;
        answer["gitlab"] = gitlab_settings(config, &gitlab);
        return super::output::json(&answer);
    }
    github(config, false)?;
    if !gitlab.is_empty() {
        say!();
        print_gitlab(config, &gitlab);
    }
    Ok(())
}

/// The URL `executor serve` receives `path` at.
fn local_url(config: &Config, path: &str) -> String {
    format!("http://{}:{}{path}", shown_host(&config.web.bind), config.web.port)
}

fn secret_set(env: &str) -> bool {
    std::env::var(env).is_ok_and(|v| !v.is_empty())
}

/// GitHub's settings: printed, or (`json`) returned as the answer's body.
fn github(config: &Config, json: bool) -> anyhow::Result<serde_json::Value> {
    let local = local_url(config, "/webhooks/github");
    let secret_env = &config.github.webhook_secret_env;
    let secret_set = secret_set(secret_env);
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
        return Ok(serde_json::json!({
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
        return Ok(serde_json::Value::Null);
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
    Ok(serde_json::Value::Null)
}

fn gitlab_settings(config: &Config, projects: &[(&String, &String)]) -> serde_json::Value {
    let secret_env = &config.gitlab.webhook_secret_env;
    let projects: Vec<serde_json::Value> =
        projects.iter().map(|(name, path)| serde_json::json!({ "repo": name, "gitlab": path })).collect();
    serde_json::json!({
        "path": "/webhooks/gitlab",
        "local_url": local_url(config, "/webhooks/gitlab"),
        "secret_env": secret_env,
        "secret_set": secret_set(secret_env),
        "triggers": GITLAB_EVENTS.iter().map(|(label, _)| *label).collect::<Vec<_>>(),
        "projects": projects,
    })
}

fn print_gitlab(config: &Config, projects: &[(&String, &String)]) {
    let secret_env = &config.gitlab.webhook_secret_env;
    say!("On GitLab, for each project: Settings → Webhooks → Add new webhook");
    say!("  URL               https://YOUR-HOST/webhooks/gitlab");
    say!("                    (a public address that forwards to {})", local_url(config, "/webhooks/gitlab"));
    say!("  Secret token      the value of ${secret_env} (make one with `openssl rand -hex 32`)");
    if secret_set(secret_env) {
        say!("                    (set in this environment)");
    } else {
        say!("                    NOT set in this environment: `executor serve` refuses deliveries");
    }
    let triggers: Vec<&str> = GITLAB_EVENTS.iter().map(|(label, _)| *label).collect();
    say!("  Trigger           {}", triggers.join(", "));
    say!("  SSL verification  Enable");
    for (name, path) in projects {
        say!("  # repos.{name}: {}/{path}/-/hooks", config.gitlab.url.trim_end_matches('/'));
    }
    say!();
    say!("Or once for a whole group (Premium): the group's Settings → Webhooks, the same fields.");
    say!("Behind a reverse proxy, pass only POST /webhooks/gitlab as well.");
}

/// An IPv6 address in a URL is bracketed.
fn shown_host(bind: &str) -> String {
    if bind.contains(':') && !bind.starts_with('[') { format!("[{bind}]") } else { bind.to_string() }
}
