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

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::mpsc::Receiver;

use super::fetch::fetch;
pub use super::fetch::file_path;
use super::source::{EnvLookup, FILE_PAGE, PAGES_IN_FLIGHT, Page, SourceTask};
use crate::config::{Config, SourceConfig};
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

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
