//! Fetching one source: each kind's client made from its `[[sources]]` entry (and the environment its
//! token is read through), its pages sent to the store as they come, and its errors told with what to do
//! about them.

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::source::asana::{AsanaConfig, AsanaError, AsanaSource};
use super::source::file::{FileError, read_file_pages};
use super::source::github_issues::{GitHubIssuesConfig, GitHubIssuesSource, IssueState};
use super::source::gitlab_issues::{GitLabIssuesConfig, GitLabIssuesSource};
use super::source::jira::{JiraConfig, JiraSource};
use super::source::linear::{LinearConfig, LinearSource};
use super::source::{EnvLookup, FILE_PAGE, Fetched, Page, PageSender};
use crate::config::{Config, SourceConfig, expand_home};
use crate::github::GitHubClient;
use crate::store::Store;

/// Sends the source's pages since `since` to `pages`; the cursor for the next fetch once all were
/// sent, or why the fetch failed (with what to do about it).
pub(super) async fn fetch(
    config: &Config,
    store: &Store,
    source: &SourceConfig,
    since: Option<DateTime<Utc>>,
    env: &EnvLookup,
    github: Option<&Arc<GitHubClient>>,
    pages: PageSender,
) -> Result<Option<DateTime<Utc>>, String> {
    match source.kind.as_str() {
        "asana" => {
            let asana = AsanaSource::new(asana_config(source), env.clone()).map_err(|e| asana_error(&e))?;
            asana.fetch_pages(since, pages).await.map_err(|e| asana_error(&e))
        }
        "linear" => {
            let linear =
                LinearSource::new(linear_config(source), env.clone()).map_err(|e| linear_error(&e))?;
            linear.fetch_pages(since, pages).await.map_err(|e| linear_error(&e))
        }
        "jira" => {
            let jira = JiraSource::new(jira_config(source), env.clone()).map_err(|e| jira_error(&e))?;
            jira.fetch_pages(since, pages).await.map_err(|e| jira_error(&e))
        }
        "file" => {
            let path = file_path(config, source);
            let name = source.name.clone();
            // The file is read on a blocking thread, not on the runtime's; it waits for the store
            // when the channel is full.
            let send = move |page| pages.blocking_send(page).is_ok();
            tokio::task::spawn_blocking(move || read_file_pages(&path, &name, send))
                .await
                .map_err(|e| format!("reading the task file stopped: {e}"))?
                .map_err(|e| file_error(config, source, &e))
        }
        "github_issues" | "gitlab_issues" => {
            // A GitHub or GitLab fetch is bounded (`MAX_REQUESTS` pages) and merges an issue listed
            // twice into one task, so it is read whole and then handed on in pages.
            let fetched = match source.kind.as_str() {
                "github_issues" => fetch_github_issues(source, github, since).await?,
                _ => fetch_gitlab_issues(config, store, source, env, since).await?,
            };
            let mut refused = fetched.refused;
            let mut tasks = fetched.tasks.into_iter().peekable();
            while tasks.peek().is_some() || !refused.is_empty() {
                let page = Page { tasks: tasks.by_ref().take(FILE_PAGE).collect(), refused };
                refused = Vec::new();
                if pages.send(page).await.is_err() {
                    break;
                }
            }
            Ok(fetched.cursor)
        }
        other => Err(format!(
            "kind {other:?} is not a source executor knows (asana, github_issues, gitlab_issues, linear, jira, file)"
        )),
    }
}

/// The issues of `github = "owner/name"`, through the forge's client (its token, rate limits, retries).
async fn fetch_github_issues(
    source: &SourceConfig,
    github: Option<&Arc<GitHubClient>>,
    since: Option<DateTime<Utc>>,
) -> Result<Fetched, String> {
    let client = github.ok_or("no GitHub client: the [github] settings could not make one")?;
    let state = if source.state == "all" { IssueState::All } else { IssueState::Open };
    let cfg = GitHubIssuesConfig { repo: source.github.clone(), labels: source.labels.clone(), state };
    GitHubIssuesSource::new(client.clone(), cfg).fetch(since).await.map_err(|e| e.to_string())
}

/// The issues of `gitlab = "group/sub/project"`, through a `[gitlab]` client whose token is read
/// through `env` (the first of `token_env` set).
async fn fetch_gitlab_issues(
    config: &Config,
    store: &Store,
    source: &SourceConfig,
    env: &EnvLookup,
    since: Option<DateTime<Utc>>,
) -> Result<Fetched, String> {
    let client = crate::gitlab::GitLabClient::from_lookup(&config.gitlab, env.as_ref())
        .map_err(|e| format!("[gitlab]: {e}"))?;
    client.share_blocks(store.shared_blocks(crate::shared_blocks::gitlab_scope(&config.gitlab.url)));
    let cfg = GitLabIssuesConfig {
        project: source.gitlab.clone(),
        labels: source.labels.clone(),
        assignee: (!source.assignee.is_empty()).then(|| source.assignee.clone()),
        milestone: (!source.milestone.is_empty()).then(|| source.milestone.clone()),
        state: super::source::gitlab_issues::IssueState::parse(&source.state).unwrap_or_default(),
    };
    GitLabIssuesSource::new(Arc::new(client), cfg).fetch(since).await.map_err(|e| e.to_string())
}

fn asana_config(source: &SourceConfig) -> AsanaConfig {
    AsanaConfig {
        api_url: source.api_url.clone(),
        projects: source.projects.clone(),
        sections: source.sections.clone(),
        user_task_list: (!source.user_task_list.is_empty()).then(|| source.user_task_list.clone()),
        ..AsanaConfig::new(source.name.clone(), source.token_env.clone())
    }
}

fn linear_config(source: &SourceConfig) -> LinearConfig {
    LinearConfig {
        name: source.name.clone(),
        api_url: source.api_url.clone(),
        token_env: source.token_env.clone(),
        teams: source.teams.clone(),
        projects: source.projects.clone(),
        states: source.states.clone(),
        labels: source.labels.clone(),
        assignee: (!source.assignee.is_empty()).then(|| source.assignee.clone()),
    }
}

fn jira_config(source: &SourceConfig) -> JiraConfig {
    JiraConfig {
        name: source.name.clone(),
        site: crate::jira::JiraSite {
            base_url: source.base_url.clone(),
            auth: crate::jira::JiraAuth::parse(&source.auth).unwrap_or_default(),
            email: source.email.clone(),
            token_env: source.token_env.clone(),
        },
        jql: source.jql.clone(),
    }
}

/// As [`asana_error`], for Jira (a 400 on the search names the JQL's fault in Jira's words).
fn jira_error(e: &crate::jira::JiraError) -> String {
    if e.is_passing() {
        format!("{e}; nothing was lost: the next intake asks again for everything since the last good fetch")
    } else if let crate::jira::JiraError::BadRequest { message, .. } = e {
        format!(
            "Jira refused the source's jql: {message}; correct `jql` in the config (try it in Jira's issue search first)"
        )
    } else {
        e.to_string()
    }
}

/// As [`asana_error`], for Linear.
fn linear_error(e: &crate::linear::LinearError) -> String {
    if e.is_passing() {
        format!("{e}; nothing was lost: the next intake asks again for everything since the last good fetch")
    } else {
        e.to_string()
    }
}

/// The error's own words (a 401 already names the variable and how to get a token), and for a failure
/// on Asana's side or the network's, that waiting is the remedy.
fn asana_error(e: &AsanaError) -> String {
    let transient = match e {
        AsanaError::Status { status, .. } => *status >= 500,
        AsanaError::RateLimited { .. } | AsanaError::Transport { .. } => true,
        _ => false,
    };
    if transient {
        format!("{e}; nothing was lost: the next intake asks again for everything since the last good fetch")
    } else {
        e.to_string()
    }
}

fn file_error(config: &Config, source: &SourceConfig, e: &FileError) -> String {
    let config_file = config.source.as_ref().map_or("the config".into(), |p| p.display().to_string());
    format!("{e}; check `path` of the [[sources]] entry named {:?} in {config_file}", source.name)
}

/// The file a file source reads: `~/` is the home directory, and a relative path is relative to the
/// config file's directory (so cron, starting elsewhere, reads the same file).
pub fn file_path(config: &Config, source: &SourceConfig) -> PathBuf {
    let path = expand_home(&source.path);
    match config.source.as_ref().and_then(|file| file.parent()) {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path,
    }
}
