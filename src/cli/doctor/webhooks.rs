//! The webhook checks of `executor doctor`: the secret GitHub signs with is set, and when the last
//! verified delivery came (from the database, so it holds whichever `serve` received it).

use std::path::Path;
use std::time::Duration;

use super::{Check, Outcome, pass, problem};
use crate::config::Config;
use crate::domain::WebhookSender;
use crate::store::Store;

pub(super) async fn webhook_checks(config: &Config) -> Vec<Check> {
    if !config.repos.values().any(|r| r.forge == "github") {
        return Vec::new();
    }
    let env = &config.github.webhook_secret_env;
    if std::env::var(env).is_ok_and(|v| !v.is_empty()) {
        vec![pass("webhook secret", format!("${env} is set")), last_delivery_check(config).await]
    } else {
        vec![problem(
            Outcome::Warn,
            "webhooks",
            format!(
                "${env} is not set: GitHub deliveries are refused, so a failed check waits for the next tick \
                 (runner.loop_interval) or cron start"
            ),
            format!(
                "set ${env} where `executor serve` runs; `executor webhooks print` shows the GitHub settings"
            ),
        )]
    }
}

async fn last_delivery_check(config: &Config) -> Check {
    let url = config.database_url();
    if url.strip_prefix("sqlite://").is_some_and(|path| !Path::new(path).exists()) {
        return problem(Outcome::Warn, "last delivery", "no database yet", "run `executor init`");
    }
    let last = match tokio::time::timeout(Duration::from_secs(20), Store::open(&url)).await {
        Ok(Ok(store)) => {
            let last = store.last_delivery(WebhookSender::GitHub).await;
            store.close().await;
            last
        }
        // The database check above says what is wrong with it.
        _ => {
            return problem(
                Outcome::Warn,
                "last delivery",
                "the database could not be read",
                "see `database`",
            );
        }
    };
    match last {
        Ok(Some((at, event))) => pass(
            "last delivery",
            format!(
                "a verified GitHub delivery ({event}) came {}",
                crate::cli::output::ago(at, chrono::Utc::now())
            ),
        ),
        Ok(None) => problem(
            Outcome::Warn,
            "last delivery",
            "no verified GitHub delivery yet",
            "check the webhook's Recent Deliveries on GitHub (a 401 there: the secrets differ); \
             `executor webhooks print`",
        ),
        // A database older than the webhooks' schema: `executor migrate` (the database check says so).
        Err(e) => problem(Outcome::Warn, "last delivery", e.to_string(), "run `executor migrate`"),
    }
}
