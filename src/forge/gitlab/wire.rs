//! GitLab's GraphQL answer for merge requests (`graphql/merge_requests.graphql`), and how it reads as
//! the forge-neutral [`PrSnapshot`]. GitLab's global ids (`gid://gitlab/Note/123`) are cut to the
//! number (or hash) its REST API uses, so that an id recorded from a REST write matches the observation.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::forge::{Check, CheckStatus, Comment, DiffStat, Mergeable, PrSnapshot, PrState};

/// A connection's nodes (GitLab's lists may hold nulls), and whether more follow.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Nodes<T> {
    #[serde(default = "Vec::new")]
    pub nodes: Vec<Option<T>>,
    pub page_info: Option<PageInfo>,
}

impl<T> Nodes<T> {
    pub fn of(nodes: Vec<T>) -> Nodes<T> {
        Nodes { nodes: nodes.into_iter().map(Some).collect(), page_info: None }
    }

    pub fn into_iter(self) -> impl Iterator<Item = T> {
        self.nodes.into_iter().flatten()
    }

    /// The cursor of the next page, when GitLab says there is one.
    pub fn next_page(&self) -> Option<&str> {
        let info = self.page_info.as_ref().filter(|i| i.has_next_page)?;
        info.end_cursor.as_deref()
    }

    /// Whether GitLab says this page is not the last.
    pub fn has_more(&self) -> bool {
        self.page_info.as_ref().is_some_and(|i| i.has_next_page)
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageInfo {
    pub has_next_page: bool,
    pub end_cursor: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct WireProject {
    pub project: Option<WireMergeRequests>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireMergeRequests {
    pub merge_requests: Option<Nodes<WireMr>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireMr {
    pub iid: String,
    pub state: String,
    pub draft: bool,
    pub title: Option<String>,
    pub web_url: Option<String>,
    pub diff_head_sha: Option<String>,
    pub updated_at: String,
    pub conflicts: bool,
    pub detailed_merge_status: Option<String>,
    pub diff_refs: Option<DiffRefs>,
    pub diff_stats_summary: Option<WireDiffStats>,
    pub labels: Option<Nodes<WireLabel>>,
    pub head_pipeline: Option<WirePipeline>,
    pub discussions: Option<Nodes<WireDiscussion>>,
}

/// The commits a note on a line of the diff names (REST `position[base_sha]` …).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DiffRefs {
    pub base_sha: Option<String>,
    pub head_sha: String,
    pub start_sha: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireDiffStats {
    pub additions: i64,
    pub deletions: i64,
    pub file_count: i64,
}

#[derive(Debug, Deserialize)]
pub struct WireLabel {
    pub title: String,
}

#[derive(Debug, Deserialize)]
pub struct WirePipeline {
    pub id: String,
    pub sha: Option<String>,
    pub jobs: Option<Nodes<WireJob>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireJob {
    pub id: Option<String>,
    pub name: Option<String>,
    pub status: Option<String>,
    #[serde(default)]
    pub allow_failure: bool,
    pub web_path: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct WireDiscussion {
    pub id: String,
    pub resolvable: bool,
    pub resolved: bool,
    #[serde(default = "no_notes")]
    pub notes: Nodes<WireNote>,
}

fn no_notes() -> Nodes<WireNote> {
    Nodes::of(Vec::new())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireNote {
    pub id: String,
    pub body: String,
    pub system: bool,
    pub author: Option<WireAuthor>,
    pub position: Option<WirePosition>,
    pub created_at: DateTime<Utc>,
    /// Asked only when notes are read on their own (`notes_page.graphql`): the discussion they are in.
    #[serde(default)]
    pub discussion: Option<WireDiscussion>,
}

#[derive(Debug, Deserialize)]
pub struct WireAuthor {
    pub username: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WirePosition {
    pub new_path: Option<String>,
    pub new_line: Option<i64>,
}

/// What one merge request reads as: the snapshot, and what writing to it takes.
pub struct Read {
    pub snapshot: PrSnapshot,
    pub updated_at: String,
    pub title: String,
    pub discussion_of: HashMap<String, String>,
    pub resolvable: HashSet<String>,
    pub diff_refs: Option<DiffRefs>,
    pub head_pipeline: Option<i64>,
}

/// The number (or hash) at the end of a GitLab global id: `gid://gitlab/DiffNote/12` → `12`.
pub fn rest_id(gid: &str) -> &str {
    gid.rsplit('/').next().unwrap_or(gid)
}

impl WireMr {
    pub fn iid(&self) -> Option<i64> {
        self.iid.parse().ok()
    }

    /// The merge request as the runner sees it; `base_url` makes a job's `webPath` a link.
    pub fn read(self, base_url: &str, observed_at: DateTime<Utc>) -> Option<Read> {
        let number = self.iid()?;
        let head_sha = self.diff_head_sha.unwrap_or_default();
        let state = match self.state.as_str() {
            "merged" => PrState::Merged,
            "closed" => PrState::Closed,
            _ => PrState::Open, // opened, locked
        };
        let mergeable = match (self.conflicts, self.detailed_merge_status.as_deref()) {
            (true, _) => Mergeable::Conflicting,
            (false, None | Some("CHECKING" | "UNCHECKED" | "PREPARING")) => Mergeable::Unknown,
            (false, Some(_)) => Mergeable::Mergeable,
        };
        let (checks, head_pipeline) = match self.head_pipeline {
            Some(p) => {
                let sha = p.sha.unwrap_or_default();
                let id = rest_id(&p.id).parse().ok().filter(|_| sha == head_sha);
                (checks(p.jobs, &sha, base_url), id)
            }
            None => (Vec::new(), None),
        };
        let mut read = Read {
            snapshot: PrSnapshot {
                number,
                url: self.web_url.unwrap_or_default(),
                state,
                draft: self.draft,
                head_sha,
                labels: self.labels.map(|l| l.into_iter().map(|l| l.title).collect()).unwrap_or_default(),
                mergeable,
                checks,
                comments: Vec::new(),
                observed_at,
                diff: self.diff_stats_summary.map(|d| DiffStat {
                    files: d.file_count,
                    additions: d.additions,
                    deletions: d.deletions,
                }),
            },
            updated_at: self.updated_at,
            title: self.title.unwrap_or_default(),
            discussion_of: HashMap::new(),
            resolvable: HashSet::new(),
            diff_refs: self.diff_refs,
            head_pipeline,
        };
        for discussion in self.discussions.into_iter().flat_map(Nodes::into_iter) {
            read.add_discussion(discussion);
        }
        Some(read)
    }
}

impl Read {
    /// A discussion's notes as comments. System notes ("added 1 commit") are GitLab's, not anyone's
    /// words: dropped. In a resolvable discussion (a review thread) the first note opens the thread and
    /// the later ones answer it; a plain comment's discussion is a conversation comment.
    fn add_discussion(&mut self, discussion: WireDiscussion) {
        let id = rest_id(&discussion.id).to_string();
        if discussion.resolvable {
            self.resolvable.insert(id.clone());
        }
        let mut first: Option<String> = None;
        for note in discussion.notes.into_iter() {
            let note_id = rest_id(&note.id).to_string();
            self.discussion_of.insert(note_id.clone(), id.clone());
            if note.system {
                continue;
            }
            let (path, line) = match note.position {
                Some(p) => (p.new_path, p.new_line),
                None => (None, None),
            };
            self.snapshot.comments.push(Comment {
                id: note_id.clone(),
                author: note.author.map(|a| a.username).unwrap_or_default(),
                body: note.body,
                created_at: note.created_at,
                path,
                line,
                thread_id: discussion.resolvable.then(|| id.clone()),
                thread_resolved: discussion.resolvable && discussion.resolved,
                in_reply_to: first.clone(),
                by_agent: false,
                from_dashboard: false,
                author_association: None,
            });
            first.get_or_insert(note_id);
        }
    }
}

fn checks(jobs: Option<Nodes<WireJob>>, sha: &str, base_url: &str) -> Vec<Check> {
    jobs.into_iter()
        .flat_map(Nodes::into_iter)
        .filter_map(|job| {
            Some(Check {
                name: job.name?,
                status: job_status(job.status.as_deref().unwrap_or("CREATED"), job.allow_failure),
                sha: sha.to_string(),
                url: job.web_path.map(|p| format!("{base_url}{p}")),
                summary: None,
                job_id: job.id.as_deref().and_then(|id| rest_id(id).parse().ok()),
            })
        })
        .collect()
}

/// GitLab's job status as a check's. A failed job allowed to fail does not fail the pipeline: neutral.
/// A manual job waits for a person and never runs by itself: neutral too (required, it stays not green).
pub fn job_status(status: &str, allow_failure: bool) -> CheckStatus {
    match status {
        "SUCCESS" => CheckStatus::Success,
        "FAILED" if allow_failure => CheckStatus::Neutral,
        "FAILED" => CheckStatus::Failure,
        "CANCELED" => CheckStatus::Cancelled,
        "SKIPPED" => CheckStatus::Skipped,
        "MANUAL" => CheckStatus::Neutral,
        // CREATED, WAITING_FOR_RESOURCE, PREPARING, PENDING, RUNNING, SCHEDULED, and any newer one.
        _ => CheckStatus::Pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_ids_read_as_rest_ids() {
        assert_eq!(rest_id("gid://gitlab/DiffNote/12"), "12");
        assert_eq!(rest_id("gid://gitlab/Discussion/ab12"), "ab12");
        assert_eq!(rest_id("7"), "7");
    }

    #[test]
    fn job_statuses() {
        assert_eq!(job_status("RUNNING", false), CheckStatus::Pending);
        assert_eq!(job_status("FAILED", false), CheckStatus::Failure);
        assert_eq!(job_status("FAILED", true), CheckStatus::Neutral);
        assert_eq!(job_status("SUCCESS", false), CheckStatus::Success);
        assert_eq!(job_status("CANCELED", false), CheckStatus::Cancelled);
    }
}
