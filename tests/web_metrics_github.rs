//! `/metrics` tells what is left of the GitHub token's hourly budget, read from the fake GitHub's
//! `GET /rate_limit` (free on GitHub: it costs nothing of what it reports).

mod common;
mod fake_github;
mod web_support;

use std::sync::Arc;

use executor::config::Config;
use executor::github::{GitHubClient, TokenSources};
use executor::web::AppState;
use fake_github::FakeGitHub;

const TOKEN: &str = "ghp_metrics-token-0123456789abcdef";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_report_the_github_rate_limit_left() {
    let fake = FakeGitHub::start().await;
    fake.set_token(TOKEN);
    let github = executor::config::GitHub { api_url: fake.api_url(), ..Default::default() };
    let client = Arc::new(GitHubClient::with_sources(&github, TokenSources::given(TOKEN)).unwrap());
    let db = common::sqlite();
    let dashboard_token = "t".repeat(32);
    let state =
        AppState::new(db.open().await, Arc::new(Config::default()), dashboard_token.clone(), Some(client));
    let (base, _stop) = web_support::serve(state).await;
    let http = reqwest::Client::new();
    let response = http.get(format!("{base}/metrics")).bearer_auth(&dashboard_token).send().await.unwrap();
    let text = response.text().await.unwrap();
    assert!(text.contains("# TYPE executor_github_rate_remaining gauge"), "{text}");
    for resource in ["core", "graphql"] {
        let line = format!("executor_github_rate_remaining{{resource=\"{resource}\"}} 5000");
        assert!(text.lines().any(|l| l == line), "{line} not in:\n{text}");
    }
    assert!(!text.contains(TOKEN), "the token never appears");
}
