//! Observing a project's merge requests: one GraphQL request per `gitlab.batch_size` of them, guarded
//! by `GET /projects/:id/merge_requests?updated_after=…&order_by=updated_at`. The listing reaches back a
//! second before the newest change the last one saw (GitLab's times are the server's, so every change
//! since is newer); a merge request listed with an `updated_at` other than the one last seen changed and
//! is asked again, one not listed did not change. A full page that does not reach back before that
//! newest change may miss some: then every merge request is asked. A merge request whose pipeline is still running, has
//! none yet, or lacks a required job is asked every tick anyway (a job finishing leaves `updated_at` as
//! it was), as is one whose mergeability GitLab is still computing.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

use chrono::{DateTime, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use super::wire::{WireMr, WireProject};
use super::{GitLabForge, Observed};
use crate::domain::Run;
use crate::forge::{ChecksAwaited, ForgeError, Mergeable, PrSnapshot, Snapshots, Unobserved};
use crate::gitlab::{GitLabError, segment};

/// The batch query (validated against GitLab's schema by `tests/gitlab_schema.rs`).
pub const MERGE_REQUESTS: &str = include_str!("graphql/merge_requests.graphql");
/// Merge requests per listing page (GitLab's maximum): a full page may not hold every change.
const LISTED: usize = 100;

impl GitLabForge {
    /// The merge requests of these runs, by run id, each marked with executor's comments by what the
    /// database says now. See [`crate::forge::Forge::snapshots`].
    pub async fn snapshots(&self, runs: &[Run]) -> Result<Snapshots, ForgeError> {
        self.observe(runs, true).await
    }

    /// [`GitLabForge::snapshots`] without logging the strangers' notes it ignores: for a command an
    /// agent runs, whose output the agent reads (a stranger's username never reaches an agent).
    pub async fn snapshots_unlogged(&self, runs: &[Run]) -> Result<Snapshots, ForgeError> {
        self.observe(runs, false).await
    }

    async fn observe(&self, runs: &[Run], log_ignored: bool) -> Result<Snapshots, ForgeError> {
        let wanted: Vec<(i64, i64)> = runs.iter().filter_map(|r| Some((r.id, r.pr_number?))).collect();
        self.load_memory().await?;
        // Merge requests a webhook delivery said changed (`POST /webhooks/gitlab`): asked whatever the
        // listing says (it may not show the change yet; then later ticks catch up, as polling would).
        let marks = self.store.pr_marks(&self.repo_name).await?;
        let marked: HashSet<i64> = marks.iter().map(|(_, iid)| *iid).collect();
        // Taken even when everything is asked anyway, so that the next tick has a listing to compare.
        let page = self.list().await?;
        let required = &self.repo.required_checks;
        let to_ask: HashSet<i64> = wanted
            .iter()
            .map(|(_, iid)| *iid)
            .filter(|iid| match self.cached(*iid) {
                None => true,
                Some(o) => {
                    !page.complete
                        || page.changed(*iid, &o)
                        || marked.contains(iid)
                        || still_moving(&o.snapshot, required)
                }
            })
            .collect();
        // What is kept of a merge request that changed (or may have) and is not asked now is out of date:
        // dropped before anything can fail, so that no later observation answers from it.
        let stale: Vec<i64> = match self.cache.lock() {
            Ok(cache) => cache
                .iter()
                .filter(|(iid, o)| !to_ask.contains(iid) && (!page.complete || page.changed(**iid, o)))
                .map(|(iid, _)| *iid)
                .collect(),
            Err(_) => Vec::new(),
        };
        for iid in &stale {
            self.forget_observation(*iid);
        }
        let to_ask: Vec<i64> = to_ask.into_iter().collect();
        let mut answered: HashMap<i64, Result<Observed, String>> = HashMap::new();
        for (iid, mut observed) in self.ask_in_batches(&to_ask).await? {
            // Asked after the listing: as new as what it listed, at least.
            if let (Ok(o), Some(at)) = (&mut observed, page.updated.get(&iid)) {
                o.updated_at.clone_from(at);
            }
            answered.insert(iid, observed);
        }
        // Everything the listing announced is observed (or dropped): the next listing may start later.
        let newest = match self.listed.lock() {
            Ok(mut listed) => {
                listed.newest = listed.newest.max(page.newest);
                listed.newest
            }
            Err(_) => None,
        };
        let fresh: Vec<(i64, Observed)> =
            answered.iter().filter_map(|(iid, o)| Some((*iid, o.as_ref().ok()?.clone()))).collect();
        let failed = answered.iter().filter(|(_, o)| o.is_err()).map(|(iid, _)| *iid);
        let forgotten: Vec<i64> = stale.iter().copied().chain(failed).collect();
        self.keep(&fresh, &forgotten, newest).await?;
        // The marks honoured, up to the newest read (never one made since); a failed one stays.
        let done: Vec<i64> = fresh.iter().map(|(iid, _)| *iid).filter(|iid| marked.contains(iid)).collect();
        if let Some(up_to) = marks.iter().map(|(id, _)| *id).max().filter(|_| !done.is_empty()) {
            self.store.clear_pr_marks(&self.repo_name, &done, up_to).await?;
        }
        let agent =
            self.store.agent_comments(&wanted.iter().map(|(run, _)| *run).collect::<Vec<_>>()).await?;
        let mut all = Snapshots::default();
        for run in runs {
            let Some(iid) = run.pr_number else {
                all.prs.insert(run.id, None);
                continue;
            };
            let observed = match answered.remove(&iid) {
                Some(Ok(o)) => {
                    self.remember(iid, o.clone());
                    o
                }
                Some(Err(why)) => {
                    self.forget_observation(iid);
                    all.unobserved.insert(run.id, Unobserved { number: iid, since: Utc::now(), why });
                    continue;
                }
                None => match self.cached(iid) {
                    Some(o) => o,
                    None => return Err(ForgeError::Unobserved { number: iid, why: "not observed".into() }),
                },
            };
            let mut snapshot = observed.snapshot;
            crate::forge::github::recorded::mark_executors(&mut snapshot, &agent);
            if log_ignored {
                self.note_ignored(&snapshot);
            }
            all.prs.insert(run.id, Some(snapshot));
        }
        Ok(all)
    }

    /// The run's merge request asked of GitLab now, whatever was kept of it.
    pub async fn snapshot_asked_again(&self, run: &Run) -> Result<Option<PrSnapshot>, ForgeError> {
        // What the database keeps is read first, or this observation would load it back after.
        self.load_memory().await?;
        if let Some(iid) = run.pr_number {
            self.forget_observation(iid);
        }
        self.snapshots_unlogged(std::slice::from_ref(run)).await?.take(run.id)
    }

    fn remember(&self, iid: i64, observed: Observed) {
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(iid, observed);
        }
    }

    /// The merge requests updated since a second before the last listing's newest change, newest first.
    async fn list(&self) -> Result<Page, ForgeError> {
        let since = self.listed.lock().ok().and_then(|l| l.newest);
        let mut path = format!(
            "{}/merge_requests?state=all&order_by=updated_at&sort=desc&per_page={LISTED}",
            self.project_path()
        );
        if let Some(since) = since {
            let after =
                (since - chrono::TimeDelta::seconds(1)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            path.push_str(&format!("&updated_after={}", segment(&after)));
        }
        let answer = self.client.rest(Method::GET, &path, None).await?;
        let items = answer.as_array().ok_or_else(|| malformed(&path, "the listing is not a list"))?;
        let mut page = Page { updated: HashMap::new(), complete: false, newest: None };
        for item in items {
            let (Some(iid), Some(at)) =
                (item.get("iid").and_then(Value::as_i64), item.get("updated_at").and_then(Value::as_str))
            else {
                continue;
            };
            page.newest = page.newest.max(at.parse::<DateTime<Utc>>().ok());
            page.updated.insert(iid, at.to_string());
        }
        // A full page holds every change since the last listing when it reaches back before that
        // listing's newest change (the page is newest first; what changed since is newer).
        let oldest = items.last().and_then(|i| i.get("updated_at")?.as_str()?.parse::<DateTime<Utc>>().ok());
        let whole = items.len() < LISTED || matches!((oldest, since), (Some(o), Some(s)) if o < s);
        page.complete = since.is_some() && whole;
        Ok(page)
    }

    /// `iids` asked `batch_size` at a time. A batch GitLab refuses as too complex is asked again in two
    /// halves, and the smaller size kept for the rest of the forge's life (the log says so once).
    async fn ask_in_batches(&self, iids: &[i64]) -> Result<Vec<(i64, Result<Observed, String>)>, ForgeError> {
        let size = self.batch_size.load(Ordering::Relaxed);
        let mut waiting: Vec<Vec<i64>> = iids.chunks(size).map(<[i64]>::to_vec).collect();
        let mut answers = Vec::new();
        while let Some(batch) = waiting.pop() {
            match self.ask(&batch).await {
                Ok(answered) => answers.extend(answered),
                Err(ForgeError::GitLab(GitLabError::TooComplex(why))) if batch.len() > 1 => {
                    let half = batch.len().div_ceil(2);
                    if self.batch_size.fetch_min(half, Ordering::Relaxed) > half {
                        tracing::warn!(
                            project = %self.project,
                            "GitLab refused {} merge requests in one query as too complex ({why}); asking {half} at a time from now on (lower [gitlab] batch_size to start there)",
                            batch.len()
                        );
                    }
                    waiting.extend(batch.chunks(half).map(<[i64]>::to_vec));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(answers)
    }

    /// One GraphQL request for these merge requests: each one's observation, or why it has none.
    async fn ask(&self, iids: &[i64]) -> Result<Vec<(i64, Result<Observed, String>)>, ForgeError> {
        let asked_at = Utc::now();
        let vars = json!({
            "path": self.project,
            "iids": iids.iter().map(i64::to_string).collect::<Vec<_>>(),
            "count": iids.len(),
        });
        let data = self.client.graphql(MERGE_REQUESTS, vars).await?;
        let answer: WireProject =
            serde_json::from_value(data).map_err(|e| malformed("/api/graphql", &e.to_string()))?;
        let project = answer.project.ok_or_else(|| {
            ForgeError::Config(format!(
                "GitLab has no project {} visible to the token (repos.{}.gitlab)",
                self.project, self.repo_name
            ))
        })?;
        let mut found: HashMap<i64, Result<Observed, String>> = HashMap::new();
        let nodes = project.merge_requests.map(|m| m.nodes).unwrap_or_default();
        for mut mr in nodes.into_iter().flatten() {
            let Some(iid) = mr.iid() else { continue };
            match self.read_on(&mut mr).await {
                Ok(()) => {}
                // This merge request's pages failed: it is asked again next tick, the others stand.
                Err(ForgeError::GitLab(e)) if !e.is_rate_limit() && !e.is_auth() => {
                    found.insert(iid, Err(e.to_string()));
                    continue;
                }
                Err(e) => return Err(e),
            }
            if let Some(observed) = observed(mr, &self.base_url, asked_at) {
                found.insert(iid, Ok(observed));
            }
        }
        Ok(iids
            .iter()
            .map(|iid| {
                let o = found.remove(iid).unwrap_or_else(|| {
                    Err(format!("GitLab has no merge request !{iid} in {}", self.project))
                });
                (*iid, o)
            })
            .collect())
    }
}

/// One listing: each listed merge request's `updated_at`, whether the listing holds every change since
/// the last one, and its newest change.
struct Page {
    updated: HashMap<i64, String>,
    complete: bool,
    newest: Option<DateTime<Utc>>,
}

impl Page {
    /// Whether the listing shows merge request `iid` changed since `kept` was observed.
    fn changed(&self, iid: i64, kept: &Observed) -> bool {
        self.updated.get(&iid).is_some_and(|at| *at != kept.updated_at)
    }
}

fn observed(mr: WireMr, base_url: &str, asked_at: DateTime<Utc>) -> Option<Observed> {
    let read = mr.read(base_url, asked_at)?;
    Some(Observed {
        snapshot: read.snapshot,
        updated_at: read.updated_at,
        title: read.title,
        discussion_of: read.discussion_of,
        resolvable: read.resolvable,
        diff_refs: read.diff_refs,
        head_pipeline: read.head_pipeline,
    })
}

/// Whether a merge request may change without its `updated_at` moving: its pipeline runs, has not
/// started, lacks a required job, or GitLab still computes whether it merges.
fn still_moving(pr: &PrSnapshot, required: &[String]) -> bool {
    pr.state == crate::forge::PrState::Open
        && (pr.checks_awaited(required) != ChecksAwaited::Nothing || pr.mergeable == Mergeable::Unknown)
}

fn malformed(path: &str, reason: &str) -> ForgeError {
    ForgeError::GitLab(GitLabError::Malformed { path: path.into(), reason: reason.into() })
}
