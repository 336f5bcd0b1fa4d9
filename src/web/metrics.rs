//! `/metrics` in the Prometheus text format (version 0.0.4): a handful of aggregate queries per scrape,
//! whatever the size of the queue.

use std::fmt::Write as _;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::domain::{QueueStatus, RunState};
use crate::github::GitHubClient;
use crate::store::{Result, RunnerStatus, now, start_of_day};
use reqwest::Method;

/// The Content-Type Prometheus expects for this format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `GET /metrics`: the exposition text, or 500 with the reason when the database cannot be read.
pub async fn metrics(State(state): State<AppState>) -> Response {
    match render(&state).await {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(e) => {
            tracing::warn!("metrics failed: {e}");
            (StatusCode::INTERNAL_SERVER_ERROR, format!("metrics failed: {e}\n")).into_response()
        }
    }
}

/// The whole exposition text.
pub async fn render(state: &AppState) -> Result<String> {
    let store = &state.store;
    let counts = store.status_counts().await?;
    let mut out = Metrics::default();

    out.family("executor_tasks", "gauge", "Tasks in the queue, by status.");
    for status in QueueStatus::ALL {
        let n = counts.queue.iter().find(|(k, _)| k == status.as_str()).map_or(0, |(_, v)| *v);
        out.sample("executor_tasks", &[("status", status.as_str())], n as f64);
    }
    out.family("executor_runs", "gauge", "Runs, by state.");
    for s in RunState::ALL {
        let n = counts.runs.iter().find(|(k, _)| k == s.as_str()).map_or(0, |(_, v)| *v);
        out.sample("executor_runs", &[("state", s.as_str())], n as f64);
    }
    out.family("executor_live_workers", "gauge", "Worker sessions not yet ended, on every host.");
    out.sample("executor_live_workers", &[], store.live_worker_count().await? as f64);

    let name = "executor_worker_duration_seconds";
    out.family(name, "summary", "Wall-clock time of ended worker sessions, by kind.");
    for d in store.worker_durations().await? {
        out.sample(&format!("{name}_sum"), &[("kind", &d.kind)], d.seconds);
        out.sample(&format!("{name}_count"), &[("kind", &d.kind)], d.count as f64);
    }
    out.family(
        "executor_spend_usd_today",
        "gauge",
        "Dollars spent by workers and analyses since midnight UTC.",
    );
    out.sample("executor_spend_usd_today", &[], store.spent_since(start_of_day(now())).await?);
    out.family("executor_budget_per_day_usd", "gauge", "The daily budget (budget.per_day_usd).");
    out.sample("executor_budget_per_day_usd", &[], state.config.budget.per_day_usd);

    runner_metrics(&store.runner_statuses().await?, &mut out);
    let sources = store.source_cursors().await?;
    out.family("executor_source_errors", "gauge", "Task sources whose last fetch failed.");
    let failing = sources.iter().filter(|s| s.last_error.is_some()).count();
    out.sample("executor_source_errors", &[], failing as f64);
    if let Some(client) = &state.github {
        github_rate(client, &mut out).await;
    }
    Ok(out.text)
}

/// Per host, the ticks and errors of its listed runners (every live one and the last that ended); per
/// runner, whether it is alive, the runs it holds and how old its heartbeat is.
fn runner_metrics(runners: &[RunnerStatus], out: &mut Metrics) {
    let by_host: Vec<&[RunnerStatus]> = runners.chunk_by(|a, b| a.host == b.host).collect();
    let per_host = |out: &mut Metrics, name: &str, value: fn(&RunnerStatus) -> i64| {
        for group in &by_host {
            let host = group.first().map_or("", |r| r.host.as_str());
            out.sample(name, &[("host", host)], group.iter().map(value).sum::<i64>() as f64);
        }
    };
    let name = "executor_runner_ticks_total";
    out.family(name, "counter", "Ticks of each host's live runners and of its last ended one.");
    per_host(out, name, |r| r.ticks);
    let name = "executor_runner_errors_total";
    out.family(name, "counter", "Errors met by each host's live runners and by its last ended one.");
    per_host(out, name, |r| r.errors);

    let now = now();
    let per_runner = |out: &mut Metrics, name: &str, value: &dyn Fn(&RunnerStatus) -> f64| {
        for r in runners {
            out.sample(name, &[("host", &r.host), ("runner", &r.id)], value(r));
        }
    };
    let name = "executor_runner_alive";
    out.family(name, "gauge", "1 while the runner heartbeats (by the database's clock), else 0.");
    per_runner(out, name, &|r| if r.alive { 1.0 } else { 0.0 });
    let name = "executor_runner_leases";
    out.family(name, "gauge", "Active runs whose lease the runner holds.");
    per_runner(out, name, &|r| r.leases as f64);
    let name = "executor_runner_heartbeat_age_seconds";
    out.family(name, "gauge", "Seconds since the runner's last heartbeat.");
    // Heartbeats are stamped by the database's clock: when this host's clock is behind it, the age is 0.
    per_runner(out, name, &|r| (now - r.heartbeat_at).num_milliseconds().max(0) as f64 / 1000.0);
}

/// What is left of the GitHub token's hourly budget, as GitHub reports it (`GET /rate_limit`, free). A
/// failed read is logged and its samples left out, rather than failing the whole scrape.
async fn github_rate(client: &GitHubClient, out: &mut Metrics) {
    let answer = match client.rest(Method::GET, "/rate_limit", None).await {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!("metrics: GitHub rate limit: {e}");
            return;
        }
    };
    let name = "executor_github_rate_remaining";
    out.family(name, "gauge", "Requests (REST) or points (GraphQL) left this hour for the GitHub token.");
    for resource in ["core", "graphql"] {
        if let Some(left) =
            answer.pointer(&format!("/resources/{resource}/remaining")).and_then(|v| v.as_f64())
        {
            out.sample(name, &[("resource", resource)], left);
        }
    }
}

#[derive(Default)]
struct Metrics {
    text: String,
}

impl Metrics {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
            let _ = write!(self.text, "{{{}}}", labels.join(","));
        }
        let _ = writeln!(self.text, " {value}");
    }
}

/// A label value as the format wants it: backslash, double quote and newline escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
