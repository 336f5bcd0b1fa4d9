//! The webhook checks of `executor doctor`: the secret each forge in use signs (GitHub) or sends
//! (GitLab) is set, and when the last verified delivery came (from the database, so it holds whichever
//! `serve` received it).

use std::path::Path;
use std::time::Duration;

use super::{Check, Outcome, pass, problem};
use crate::config::Config;
use crate::domain::WebhookSender;
use crate::store::Store;

pub(super) async fn webhook_checks(config: &Config) -> Vec<Check> {
    let mut checks = Vec::new();
    for (sender, forge, env) in [
        (WebhookSender::GitHub, "GitHub", &config.github.webhook_secret_env),
        (WebhookSender::GitLab, "GitLab", &config.gitlab.webhook_secret_env),
    ] {
        if !config.repos.values().any(|r| r.forge == sender.as_str()) {
            continue;
        }
        if std::env::var(env).is_ok_and(|v| !v.is_empty()) {
            checks.push(pass(&named(sender, "webhook secret"), format!("${env} is set")));
            checks.push(last_delivery_check(config, sender, forge).await);
        } else {
            checks.push(problem(
                Outcome::Warn,
                &named(sender, "webhooks"),
                format!(
                    "${env} is not set: {forge} deliveries are refused, so a failed check waits for the next \
                     tick (runner.loop_interval) or cron start"
                ),
                format!(
                    "set ${env} where `executor serve` runs; `executor webhooks print` shows the {forge} settings"
                ),
            ));
        }
    }
    checks
}

/// A check's name: GitHub's as they were before GitLab joined (scripts read them), GitLab's prefixed.
fn named(sender: WebhookSender, check: &str) -> String {
    match sender {
        WebhookSender::GitLab => format!("GitLab {check}"),
        _ => check.to_string(),
    }
}

async fn last_delivery_check(config: &Config, sender: WebhookSender, forge: &str) -> Check {
    let name = named(sender, "last delivery");
    let url = config.database_url();
    if url.strip_prefix("sqlite://").is_some_and(|path| !Path::new(path).exists()) {
        return problem(Outcome::Warn, &name, "no database yet", "run `executor init`");
    }
    let last = match tokio::time::timeout(Duration::from_secs(20), Store::open(&url)).await {
        Ok(Ok(store)) => {
            let last = store.last_delivery(sender).await;
            store.close().await;
            last
        }
        // The database check above says what is wrong with it.
        _ => {
            return problem(Outcome::Warn, &name, "the database could not be read", "see `database`");
        }
    };
    match last {
        Ok(Some((at, event))) => pass(
            &name,
            format!(
                "a verified {forge} delivery ({event}) came {}",
                crate::cli::output::ago(at, chrono::Utc::now())
            ),
        ),
        Ok(None) => problem(
            Outcome::Warn,
            &name,
            format!("no verified {forge} delivery yet"),
            match sender {
                WebhookSender::GitLab => {
                    "check the webhook's Recent events on GitLab (a 401 there: the secret \
                                          tokens differ); `executor webhooks print`"
                }
                _ => {
                    "check the webhook's Recent Deliveries on GitHub (a 401 there: the secrets differ); \
                      `executor webhooks print`"
                }
            },
        ),
        // A database older than the webhooks' schema: `executor migrate` (the database check says so).
        Err(e) => problem(Outcome::Warn, &name, e.to_string(), "run `executor migrate`"),
    }
}
