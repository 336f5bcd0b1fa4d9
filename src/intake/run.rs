//! One intake: each configured source fetched from where its last fetch ended, its tasks upserted into
//! the queue page by page as they arrive (see [`take_in`]), and only after the last page its cursor
//! moved on.
//!
//! Why per source and in this order: a source that fails (a revoked token, a server error, a missing
//! file) must not keep the others' tasks out, and its cursor must stay where it was so the next intake
//! asks again for everything it missed. The cursor is written after the last commit, so a crash or a
//! failure before it only fetches the same tasks again (an upsert of an unchanged task changes
//! nothing).
//!
//! An intake never changes a task's status: a new task waits as `pending` for the analyzer, a known one
//! keeps what a human or the analyzer set, and changed text of an approved task is kept aside as a
//! revision for a human (the store's upsert rules, `store::tasks::plan`).

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::mpsc::Receiver;

use super::source::asana::{AsanaConfig, AsanaError, AsanaSource};
use super::source::file::{FileError, read_file_pages};
use super::source::github_issues::{GitHubIssuesConfig, GitHubIssuesSource, IssueState};
use super::source::gitlab_issues::{GitLabIssuesConfig, GitLabIssuesSource};
use super::source::jira::{JiraConfig, JiraSource};
use super::source::linear::{LinearConfig, LinearSource};
use super::source::{EnvLookup, FILE_PAGE, Fetched, PAGES_IN_FLIGHT, Page, PageSender, SourceTask};
use crate::config::{Config, SourceConfig, expand_home};
use crate::domain::{Actor, GidError, TaskGid};
use crate::github::GitHubClient;
use crate::store::{NewTask, STATISTICS_AFTER_ROWS, Store, StoreError, Upserted};

/// The actor recorded on the events of tasks an intake adds or changes: intake is the analyzer's first
/// step, and `executor analyzer` runs it too.
pub const INTAKE_ACTOR: Actor = Actor::Analyzer;

/// What an intake did, source by source, in the config's order.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct IntakeReport {
    pub sources: Vec<SourceReport>,
}

impl IntakeReport {
    /// The sources whose fetch or write failed.
    pub fn failed(&self) -> impl Iterator<Item = &SourceReport> {
        self.sources.iter().filter(|s| s.error.is_some())
    }
}

/// What one source delivered and what became of it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SourceReport {
    /// The source's `name` in the config (each of its tasks' `source`).
    pub name: String,
    /// `asana`, `github_issues`, `gitlab_issues`, `linear`, `jira` or `file`.
    pub kind: String,
    /// Tasks the source delivered (refused ones not counted).
    pub fetched: usize,
    pub added: usize,
    pub updated: usize,
    pub unchanged: usize,
    /// Approved tasks whose text changed (or changed back): the approved text is kept.
    pub revised: usize,
    /// The tasks whose new text now waits for a human (`executor approve GID` accepts it).
    pub revisions_pending: Vec<TaskGid>,
    /// Of those, the done tasks: their work is finished, so `approve` cannot accept their revision.
    pub revisions_of_done: Vec<TaskGid>,
    /// Items that could not be taken in; the others were.
    pub refused: Vec<Refusal>,
    /// Why the source's intake failed: the pages stored before the failure stay stored (counted
    /// above), its cursor stayed.
    pub error: Option<String>,
    /// Where the next fetch starts: the latest modification seen (unchanged after an error).
    pub cursor: Option<DateTime<Utc>>,
}

/// One item a source could not deliver, or one it delivered that cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Refusal {
    /// The source's name and the item's place (`inbox line 4`, `backlog task 12/x`).
    #[serde(rename = "where")]
    pub place: String,
    pub why: String,
}

/// Why an intake could not run at all (a source's own failure is in its [`SourceReport`] instead).
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    #[error("there is no source named {name:?}; {known}")]
    UnknownSource { name: String, known: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A source's task as the queue stores it: the description is the title, then a blank line and the
/// body when there is one; `notes` stays `None` (it is executor's field for a human's context); the
/// source's facts and raw object as given; `source` is the source's name and `repo` its repo, if set.
/// Refused when the source's id is not a valid task gid.
pub fn to_new_task(source: &SourceConfig, t: SourceTask) -> Result<(TaskGid, NewTask), GidError> {
    let gid = TaskGid::parse(&t.gid)?;
    let description = if t.notes.is_empty() { t.name } else { format!("{}\n\n{}", t.name, t.notes) };
    let task = NewTask {
        task_gid: Some(gid.clone()),
        source: Some(source.name.clone()),
        description: Some(description),
        notes: None,
        repo: (!source.repo.is_empty()).then(|| source.repo.clone()),
        priority: None,
        url: t.url,
        completed: t.completed,
        assignee: t.assignee,
        modified_at: t.modified_at,
        raw: Some(t.raw),
    };
    Ok((gid, task))
}

/// Fetches every configured source (or only the one named `only`) into the queue and says what each
/// did. A source that fails is recorded (`Store::set_source_failed`) and reported, and the others still
/// run; the error is only for an unknown `only` or a database that fails to record a failure.
/// `github` serves the `github_issues` sources. `full` fetches everything, ignoring the cursors (after a
/// project was added to a source, say); the cursors move on as usual.
pub async fn intake(
    config: &Config,
    store: &Store,
    only: Option<&str>,
    full: bool,
    env: EnvLookup,
    github: Option<Arc<GitHubClient>>,
) -> Result<IntakeReport, IntakeError> {
    let sources: Vec<&SourceConfig> = match only {
        None => config.sources.iter().collect(),
        Some(name) => match config.sources.iter().find(|s| s.name == name) {
            Some(source) => vec![source],
            None => return Err(IntakeError::UnknownSource { name: name.into(), known: known(config) }),
        },
    };
    let mut report = IntakeReport::default();
    for source in sources {
        report.sources.push(take_in(config, store, source, full, &env, github.as_ref()).await?);
    }
    let written: usize = report.sources.iter().map(|s| s.added + s.updated + s.revised).sum();
    if written as u64 >= STATISTICS_AFTER_ROWS {
        // A bulk intake leaves the queue without statistics the planner can trust: the filter pass
        // that follows would read it by a guess (see `Store::refresh_statistics`).
        store.refresh_statistics().await?;
    }
    Ok(report)
}

fn known(config: &Config) -> String {
    if config.sources.is_empty() {
        return "no source is configured: add a [[sources]] table to the config".into();
    }
    let names: Vec<&str> = config.sources.iter().map(|s| s.name.as_str()).collect();
    format!("the configured ones are {}", names.join(", "))
}

/// One source: fetch from its cursor (from the start when `full`), storing each page as it arrives,
/// then move the cursor on.
///
/// The source and the store run side by side over a small bounded channel: memory holds a few pages,
/// not the fetch (100,000 tasks took 0.8 GB held whole). Each batch is its own transaction, so none is
/// held open across a slow request (PostgreSQL ends a session idle in a transaction). The cursor moves
/// once, after the last page is committed: Asana's pages are not in `modified_at` order, so a cursor
/// moved mid-way could pass over tasks of later pages on a crash. A failure after some pages leaves
/// those stored (upserts are idempotent, the next intake fetches them again as unchanged) and the
/// cursor where it was.
async fn take_in(
    config: &Config,
    store: &Store,
    source: &SourceConfig,
    full: bool,
    env: &EnvLookup,
    github: Option<&Arc<GitHubClient>>,
) -> Result<SourceReport, IntakeError> {
    let since = if full { None } else { store.source_cursor(&source.name).await? };
    let mut report = SourceReport {
        name: source.name.clone(),
        kind: source.kind.clone(),
        cursor: since,
        ..SourceReport::default()
    };
    let (sender, pages) = tokio::sync::mpsc::channel(PAGES_IN_FLIGHT);
    // `fetch` owns the sender and `store_pages` the receiver: when storing fails, the receiver is
    // dropped and the source stops at its next page; when the source ends, the channel closes.
    let (fetched, stored) = tokio::join!(
        fetch(config, store, source, since, env, github, sender),
        store_pages(config, store, source, pages, &mut report),
    );
    let outcome = match (fetched, stored) {
        (_, Err(why)) | (Err(why), Ok(())) => Err(why),
        (Ok(cursor), Ok(())) => Ok(cursor),
    };
    match outcome {
        Ok(cursor) => {
            store.set_source_fetched(&source.name, cursor).await?;
            report.cursor = cursor.or(since);
        }
        Err(why) => {
            // Debug only: the report carries the error to whoever prints it.
            tracing::debug!(source = %source.name, error = %why, "intake of a source failed");
            store.set_source_failed(&source.name, &why).await?;
            report.error = Some(why);
        }
    }
    Ok(report)
}

/// Stores the pages as they come, each batch in a transaction of its own, counting into `report`;
/// why it stopped if a write failed (the batches before it stay stored).
async fn store_pages(
    config: &Config,
    store: &Store,
    source: &SourceConfig,
    mut pages: Receiver<Page>,
    report: &mut SourceReport,
) -> Result<(), String> {
    while let Some(page) = pages.recv().await {
        let mut batch = vec![page];
        // Pages already waiting join this write (fewer commits), up to a store chunk's worth.
        let mut tasks = batch[0].tasks.len();
        while tasks < FILE_PAGE
            && let Ok(more) = pages.try_recv()
        {
            tasks += more.tasks.len();
            batch.push(more);
        }
        store_batch(config, store, source, batch, report).await.map_err(|e| {
            format!(
                "storing its tasks failed: {e}; the {} stored before stay, and the cursor did not move",
                report.added + report.updated + report.unchanged + report.revised
            )
        })?;
    }
    Ok(())
}

/// Upserts a batch of pages in one transaction and counts what became of each task.
async fn store_batch(
    config: &Config,
    store: &Store,
    source: &SourceConfig,
    batch: Vec<Page>,
    report: &mut SourceReport,
) -> Result<(), StoreError> {
    let mut tasks = Vec::new();
    for page in batch {
        report.fetched += page.tasks.len();
        report.refused.extend(page.refused.into_iter().map(|(place, why)| Refusal { place, why }));
        for t in page.tasks {
            // The id is the source's text: no control character of it reaches a terminal.
            let shown: String = t.gid.chars().filter(|c| !c.is_control()).take(160).collect();
            let place = format!("{} task {shown}", source.name);
            match storable(config, source, t) {
                Ok(task) => tasks.push(task),
                Err(why) => report.refused.push(Refusal { place, why }),
            }
        }
    }
    let mut intake = store.begin_intake(INTAKE_ACTOR).await?;
    let results = intake.add(&tasks).await?;
    intake.commit().await?;
    for done in results {
        match done.result {
            Upserted::Added => report.added += 1,
            Upserted::Updated => report.updated += 1,
            Upserted::Unchanged => report.unchanged += 1,
            Upserted::Revised => report.revised += 1,
        }
        if done.revision_pending && done.result == Upserted::Revised {
            if done.status == crate::domain::QueueStatus::Done {
                report.revisions_of_done.push(done.task_gid.clone());
            }
            report.revisions_pending.push(done.task_gid);
        }
    }
    Ok(())
}

/// A task the queue can hold and a run can be made of, or why not: a valid gid that also makes a
/// branch name, and no text the database refuses (checked here, per task, so one bad task never spoils
/// the whole transaction).
fn storable(config: &Config, source: &SourceConfig, t: SourceTask) -> Result<(TaskGid, NewTask), String> {
    let (gid, task) = to_new_task(source, t).map_err(|e| e.to_string())?;
    let prefix = &config.workspace.branch_prefix;
    if let Err(e) = crate::workspace::check_gid_branch(prefix, &gid) {
        return Err(format!("gid {gid} can never become a branch (workspace.branch_prefix {prefix:?}): {e}"));
    }
    if let Some(field) = task.unstorable_field() {
        return Err(format!(
            "there is a NUL character (\\0) in its {field}, which the database cannot store"
        ));
    }
    Ok((gid, task))
}

/// Sends the source's pages since `since` to `pages`; the cursor for the next fetch once all were
/// sent, or why the fetch failed (with what to do about it).
async fn fetch(
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn source(repo: &str) -> SourceConfig {
        let toml = format!("name = \"inbox\"\nkind = \"file\"\npath = \"t.jsonl\"\nrepo = \"{repo}\"\n");
        toml::from_str(&toml).unwrap()
    }

    fn task(gid: &str, notes: &str) -> SourceTask {
        SourceTask {
            gid: gid.into(),
            name: "Fix the crash".into(),
            notes: notes.into(),
            completed: Some(true),
            assignee: Some("Alex".into()),
            section: Some("Backlog".into()),
            url: Some("https://example.com/1".into()),
            modified_at: Some(Utc::now()),
            raw: json!({"gid": gid, "custom": 1}),
        }
    }

    #[test]
    fn description_is_the_title_then_the_body() {
        let (gid, t) = to_new_task(&source("app"), task("12", "It crashes on start.")).unwrap();
        assert_eq!(gid.as_str(), "12");
        assert_eq!(t.description.as_deref(), Some("Fix the crash\n\nIt crashes on start."));
        assert_eq!(t.notes, None);
        assert_eq!(t.source.as_deref(), Some("inbox"));
        assert_eq!(t.repo.as_deref(), Some("app"));
        assert_eq!((t.completed, t.assignee.as_deref()), (Some(true), Some("Alex")));
        assert_eq!(t.url.as_deref(), Some("https://example.com/1"));
        assert_eq!(t.raw, Some(json!({"gid": "12", "custom": 1})));
    }

    #[test]
    fn no_body_is_just_the_title_and_no_repo_is_none() {
        let (_, t) = to_new_task(&source(""), task("12", "")).unwrap();
        assert_eq!(t.description.as_deref(), Some("Fix the crash"));
        assert_eq!(t.repo, None);
    }

    #[test]
    fn an_id_that_is_no_gid_is_refused() {
        assert!(to_new_task(&source(""), task("../etc", "")).is_err());
    }

    #[test]
    fn a_relative_file_is_read_beside_the_config() {
        let config = Config { source: Some("/etc/executor/executor.toml".into()), ..Config::default() };
        assert_eq!(file_path(&config, &source("")), PathBuf::from("/etc/executor/t.jsonl"));
        let mut absolute = source("");
        absolute.path = "/data/t.csv".into();
        assert_eq!(file_path(&config, &absolute), PathBuf::from("/data/t.csv"));
    }
}
