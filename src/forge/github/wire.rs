//! GitHub's GraphQL answers as typed values, and their mapping onto the forge-neutral [`PrSnapshot`].
//!
//! The types mirror exactly what the documents in `graphql/` select, with GitHub's nullability: a field
//! the schema declares non-null is a plain field, a nullable one an `Option` that must still be present
//! (GitHub always sends every selected key, if only as `null`). So an answer that lacks a selected field
//! fails to deserialize and the caller reports a malformed answer instead of acting on half a picture.
//!
//! GitHub adds enum words over time (CheckConclusionState gained STARTUP_FAILURE and STALE). A new word
//! must not break every tick, so each enum has a catch-all variant, mapped to the meaning that makes the
//! runner wait or look rather than conclude: an unknown check status is pending, an unknown conclusion
//! is a failure, an unknown mergeability is unknown.
//!
//! Pure: no I/O and no clock; the caller says when the answer was observed.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::forge::{Check, CheckStatus, Comment, Mergeable, PrSnapshot, PrState};

/// Which comment ids executor posted (agents' replies, its notices, reviews), with the comment each
/// answers: kept by the store.
pub use crate::store::AgentComments;

/// The login GitHub shows for a deleted account (its `author` is null in the answer).
pub const GHOST_LOGIN: &str = "ghost";

/// GitHub Actions' app slug: only its check runs have a job whose log can be fetched by `databaseId`.
const ACTIONS_APP_SLUG: &str = "github-actions";

/// A nullable field that must be present in the answer. Serde treats a missing `Option` field as
/// `None`; going through `deserialize_with` turns a missing key into an error instead.
pub(super) fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

// ---- Connections -----------------------------------------------------------------------------------

/// A connection's `nodes`: GitHub declares the list and its items nullable (`[T]`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
pub struct Nodes<T> {
    #[serde(deserialize_with = "present")]
    pub nodes: Option<Vec<Option<T>>>,
}

impl<T> Nodes<T> {
    /// The items that are there, in GitHub's order (null items are ones the token may not see).
    pub fn into_items(self) -> impl Iterator<Item = T> {
        self.nodes.into_iter().flatten().flatten()
    }
}

/// A connection fetched in pages: its items and where the next page starts.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "T: Deserialize<'de>"))]
pub struct Paged<T> {
    pub page_info: PageInfo,
    #[serde(deserialize_with = "present")]
    pub nodes: Option<Vec<Option<T>>>,
}

impl<T> Paged<T> {
    pub fn next_page(&self) -> Option<String> {
        self.page_info.next_page()
    }

    pub fn into_items(self) -> impl Iterator<Item = T> {
        self.nodes.into_iter().flatten().flatten()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageInfo {
    pub has_next_page: bool,
    #[serde(deserialize_with = "present")]
    pub end_cursor: Option<String>,
}

impl PageInfo {
    /// The cursor to ask for the next page with; `None` when this was the last page (or GitHub says
    /// there is more but gives no cursor, which cannot be followed).
    pub fn next_page(&self) -> Option<String> {
        if self.has_next_page { self.end_cursor.clone() } else { None }
    }
}

/// `rateLimit { cost remaining resetAt }`, selected by every query so the client can keep the budget.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireRateLimit {
    pub cost: i64,
    pub remaining: i64,
    pub reset_at: DateTime<Utc>,
}

// ---- The pull request (fragment PrFields) -----------------------------------------------------------

/// One pull request as the `PrFields` fragment selects it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WirePr {
    /// The node id, for mutations (mark ready, reviews).
    pub id: String,
    pub number: i64,
    pub url: String,
    pub state: WirePrState,
    pub is_draft: bool,
    pub mergeable: WireMergeable,
    pub merge_state_status: WireMergeStateStatus,
    pub head_ref_name: String,
    pub head_ref_oid: String,
    /// Lines added and removed, and files changed, against the base (the diff stat a page shows).
    pub additions: i64,
    pub deletions: i64,
    pub changed_files: i64,
    #[serde(deserialize_with = "present")]
    pub labels: Option<Nodes<WireLabel>>,
    /// Null while no check or status has reported for the head commit.
    #[serde(deserialize_with = "present")]
    pub status_check_rollup: Option<WireRollup>,
    /// Absent when the query did not ask for them (the `PrThreads` fragment): then the last
    /// observation's threads still hold.
    #[serde(default)]
    pub review_threads: Option<Paged<WireThread>>,
    pub comments: Nodes<WireIssueComment>,
    #[serde(deserialize_with = "present")]
    pub reviews: Option<Nodes<WireReview>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WirePrState {
    Open,
    Closed,
    Merged,
    /// A state this build does not know. Read as open: the runner keeps observing, where a wrong
    /// "merged" or "closed" would end the run for good.
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WireMergeable {
    Mergeable,
    Conflicting,
    /// Still being computed by GitHub, or a word this build does not know.
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WireMergeStateStatus {
    Behind,
    Blocked,
    Clean,
    /// Conflicts with the base branch.
    Dirty,
    Draft,
    HasHooks,
    Unknown,
    Unstable,
    /// A word this build does not know; only DIRTY matters to the runner.
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WireLabel {
    pub name: String,
}

/// `author { login }`: null for a deleted account.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WireActor {
    pub login: String,
}

fn login(author: Option<WireActor>) -> String {
    author.map_or_else(|| GHOST_LOGIN.to_string(), |a| a.login)
}

// ---- Checks (fragment CheckContext) -----------------------------------------------------------------

/// The head commit's `statusCheckRollup`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireRollup {
    /// GitHub's own verdict; the runner derives its own from the contexts (see `PrSnapshot::ci`).
    pub state: WireStatusState,
    pub contexts: Paged<WireCheckContext>,
}

/// One entry of the rollup: a check run (GitHub Checks, e.g. Actions) or a commit status.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "__typename")]
pub enum WireCheckContext {
    CheckRun(WireCheckRun),
    StatusContext(WireStatusContext),
    /// A kind of context GitHub may add to the union later. Skipped: there is nothing to read from it,
    /// and `required_checks` still keeps a PR from counting as green without its named checks.
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireCheckRun {
    pub name: String,
    pub status: WireCheckStatus,
    #[serde(deserialize_with = "present")]
    pub conclusion: Option<WireConclusion>,
    #[serde(deserialize_with = "present")]
    pub details_url: Option<String>,
    /// The Actions job id. The schema says `Int`, but GitHub sends check run ids past 2^31 here (they
    /// are around 3·10^10 now), so it is read as i64.
    #[serde(deserialize_with = "present")]
    pub database_id: Option<i64>,
    #[serde(deserialize_with = "present")]
    pub summary: Option<String>,
    pub check_suite: WireCheckSuite,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WireCheckSuite {
    #[serde(deserialize_with = "present")]
    pub app: Option<WireApp>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WireApp {
    pub slug: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireStatusContext {
    pub context: String,
    pub state: WireStatusState,
    #[serde(deserialize_with = "present")]
    pub target_url: Option<String>,
    #[serde(deserialize_with = "present")]
    pub description: Option<String>,
}

/// CheckStatusState.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WireCheckStatus {
    Queued,
    InProgress,
    Waiting,
    Pending,
    Requested,
    Completed,
    /// Not known to this build: treated as still running.
    #[serde(other)]
    Unknown,
}

/// CheckConclusionState.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WireConclusion {
    Success,
    Failure,
    StartupFailure,
    Cancelled,
    TimedOut,
    ActionRequired,
    Skipped,
    Neutral,
    Stale,
    /// Not known to this build: treated as a failure, so a human or a fix looks at it.
    #[serde(other)]
    Unknown,
}

/// StatusState (a commit status, and the rollup's overall state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WireStatusState {
    Success,
    Pending,
    Expected,
    Failure,
    Error,
    /// Not known to this build: treated as still running.
    #[serde(other)]
    Unknown,
}

impl WireCheckContext {
    /// The check at `head_sha`; `None` for a kind of context this build does not know.
    fn into_check(self, head_sha: &str) -> Option<Check> {
        let sha = head_sha.to_string();
        match self {
            WireCheckContext::CheckRun(run) => {
                let from_actions = run.check_suite.app.as_ref().is_some_and(|a| a.slug == ACTIONS_APP_SLUG);
                Some(Check {
                    status: check_run_status(run.status, run.conclusion),
                    name: run.name,
                    sha,
                    url: run.details_url,
                    summary: run.summary,
                    job_id: if from_actions { run.database_id } else { None },
                })
            }
            WireCheckContext::StatusContext(status) => Some(Check {
                name: status.context,
                status: status_state(status.state),
                sha,
                url: status.target_url,
                summary: status.description,
                job_id: None,
            }),
            WireCheckContext::Other => None,
        }
    }
}

fn check_run_status(status: WireCheckStatus, conclusion: Option<WireConclusion>) -> CheckStatus {
    match status {
        WireCheckStatus::Completed => match conclusion {
            Some(WireConclusion::Success) => CheckStatus::Success,
            // STARTUP_FAILURE is usually a broken workflow file, which the agent's branch can fix.
            Some(WireConclusion::Failure | WireConclusion::StartupFailure) => CheckStatus::Failure,
            // STALE: GitHub gave up on it (no result for 14 days); it did not pass.
            Some(WireConclusion::Cancelled | WireConclusion::Stale) => CheckStatus::Cancelled,
            Some(WireConclusion::TimedOut) => CheckStatus::TimedOut,
            Some(WireConclusion::ActionRequired) => CheckStatus::ActionRequired,
            Some(WireConclusion::Skipped) => CheckStatus::Skipped,
            Some(WireConclusion::Neutral) => CheckStatus::Neutral,
            // Completed without a (known) conclusion: never read as green.
            Some(WireConclusion::Unknown) | None => CheckStatus::Failure,
        },
        WireCheckStatus::Queued
        | WireCheckStatus::InProgress
        | WireCheckStatus::Waiting
        | WireCheckStatus::Pending
        | WireCheckStatus::Requested
        | WireCheckStatus::Unknown => CheckStatus::Pending,
    }
}

fn status_state(state: WireStatusState) -> CheckStatus {
    match state {
        WireStatusState::Success => CheckStatus::Success,
        WireStatusState::Failure | WireStatusState::Error => CheckStatus::Failure,
        WireStatusState::Pending | WireStatusState::Expected | WireStatusState::Unknown => {
            CheckStatus::Pending
        }
    }
}

// ---- Review threads and comments --------------------------------------------------------------------

/// A review thread (fragment ReviewThread): comments on a line of the diff, resolvable as a whole.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireThread {
    pub id: String,
    pub is_resolved: bool,
    /// The diff moved under it. Still counts: the reviewer asked, the agent answers.
    pub is_outdated: bool,
    pub path: String,
    #[serde(deserialize_with = "present")]
    pub line: Option<i64>,
    pub comments: Nodes<WireThreadComment>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireThreadComment {
    pub id: String,
    #[serde(deserialize_with = "present")]
    pub author: Option<WireActor>,
    /// CommentAuthorAssociation, kept as GitHub's word (compared against `trust_associations`).
    pub author_association: String,
    pub body: String,
    pub created_at: DateTime<Utc>,
    pub path: String,
    /// Null when the comment's line is no longer in the diff (outdated).
    #[serde(deserialize_with = "present")]
    pub line: Option<i64>,
    #[serde(deserialize_with = "present")]
    pub reply_to: Option<WireNodeId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WireNodeId {
    pub id: String,
}

/// A conversation comment on the pull request (an IssueComment).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireIssueComment {
    pub id: String,
    #[serde(deserialize_with = "present")]
    pub author: Option<WireActor>,
    pub author_association: String,
    pub body: String,
    pub created_at: DateTime<Utc>,
}

/// A submitted review; its body is what a reviewer wrote above the line comments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireReview {
    pub id: String,
    #[serde(deserialize_with = "present")]
    pub author: Option<WireActor>,
    pub author_association: String,
    pub state: WireReviewState,
    pub body: String,
    /// Null while the review is pending (not submitted).
    #[serde(deserialize_with = "present")]
    pub submitted_at: Option<DateTime<Utc>>,
    #[serde(deserialize_with = "present")]
    pub commit: Option<WireCommit>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WireCommit {
    pub oid: String,
}

/// PullRequestReviewState.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WireReviewState {
    Approved,
    ChangesRequested,
    Commented,
    Dismissed,
    Pending,
    /// Not known to this build: its body is kept like a comment's.
    #[serde(other)]
    Unknown,
}

impl WireThread {
    fn into_comments(self, agent: &AgentComments) -> impl Iterator<Item = Comment> + '_ {
        let WireThread { id: thread_id, is_resolved, line: thread_line, comments, .. } = self;
        comments.into_items().map(move |c| Comment {
            by_agent: agent.contains_key(&c.id),
            from_dashboard: false,
            id: c.id,
            author: login(c.author),
            body: c.body,
            created_at: c.created_at,
            // An outdated comment's line is null; then the thread's (also null when the whole thread is
            // outdated) is the best there is.
            path: Some(c.path),
            line: c.line.or(thread_line),
            thread_id: Some(thread_id.clone()),
            thread_resolved: is_resolved,
            in_reply_to: c.reply_to.map(|r| r.id),
            author_association: Some(c.author_association),
        })
    }
}

/// A comment outside review threads (conversation comment, review body): what it answers is only known
/// from what executor recorded when it posted it.
fn unthreaded_comment(
    id: String,
    author: Option<WireActor>,
    author_association: String,
    body: String,
    created_at: DateTime<Utc>,
    agent: &AgentComments,
) -> Comment {
    let recorded = agent.get(&id);
    Comment {
        by_agent: recorded.is_some(),
        from_dashboard: false,
        in_reply_to: recorded.cloned().flatten(),
        id,
        author: login(author),
        body,
        created_at,
        path: None,
        line: None,
        thread_id: None,
        thread_resolved: false,
        author_association: Some(author_association),
    }
}

impl WireReview {
    /// A submitted review with something written in its body: a trusted reviewer's "request changes"
    /// text is a request like any comment. Pending reviews (not submitted, visible to their author only)
    /// and dismissed ones (withdrawn on GitHub) ask for nothing.
    fn into_comment(self, agent: &AgentComments) -> Option<Comment> {
        let submitted_at = self.submitted_at?;
        if self.body.trim().is_empty()
            || matches!(self.state, WireReviewState::Pending | WireReviewState::Dismissed)
        {
            return None;
        }
        Some(unthreaded_comment(
            self.id,
            self.author,
            self.author_association,
            self.body,
            submitted_at,
            agent,
        ))
    }
}

// ---- The mapping ------------------------------------------------------------------------------------

impl WirePr {
    /// The forge-neutral snapshot. `extra_contexts` / `extra_threads`: pages fetched after the first.
    pub fn into_snapshot(
        self,
        extra_contexts: Vec<WireCheckContext>,
        extra_threads: Vec<WireThread>,
        agent: &AgentComments,
        observed_at: DateTime<Utc>,
    ) -> PrSnapshot {
        let mergeable = self.mergeable_now();
        let state = match self.state {
            WirePrState::Merged => PrState::Merged,
            WirePrState::Closed => PrState::Closed,
            WirePrState::Open | WirePrState::Unknown => PrState::Open,
        };
        let head_sha = self.head_ref_oid.clone();
        // The rollup is the head commit's, so every check is at the head.
        let checks = self
            .status_check_rollup
            .into_iter()
            .flat_map(|rollup| rollup.contexts.into_items())
            .chain(extra_contexts)
            .filter_map(|context| context.into_check(&head_sha))
            .collect();

        let mut comments: Vec<Comment> = Vec::new();
        for thread in self.review_threads.into_iter().flat_map(Paged::into_items).chain(extra_threads) {
            comments.extend(thread.into_comments(agent));
        }
        comments.extend(
            self.comments.into_items().map(|c| {
                unthreaded_comment(c.id, c.author, c.author_association, c.body, c.created_at, agent)
            }),
        );
        comments.extend(
            self.reviews.into_iter().flat_map(Nodes::into_items).filter_map(|r| r.into_comment(agent)),
        );

        PrSnapshot {
            number: self.number,
            url: self.url,
            state,
            draft: self.is_draft,
            head_sha,
            labels: self.labels.into_iter().flat_map(Nodes::into_items).map(|l| l.name).collect(),
            mergeable,
            checks,
            comments,
            observed_at,
            diff: Some(crate::forge::DiffStat {
                files: self.changed_files,
                additions: self.additions,
                deletions: self.deletions,
            }),
        }
    }

    /// CONFLICTING, or a merge state of DIRTY, is a conflict; UNKNOWN means GitHub is still computing
    /// (observe again, do not act).
    fn mergeable_now(&self) -> Mergeable {
        if self.mergeable == WireMergeable::Conflicting
            || self.merge_state_status == WireMergeStateStatus::Dirty
        {
            Mergeable::Conflicting
        } else if self.mergeable == WireMergeable::Unknown {
            Mergeable::Unknown
        } else {
            Mergeable::Mergeable
        }
    }

    /// The cursor of the next page of check contexts (`check_contexts_page.graphql`), if there is one.
    pub fn contexts_next_page(&self) -> Option<String> {
        self.status_check_rollup.as_ref().and_then(|r| r.contexts.next_page())
    }

    /// The cursor of the next page of review threads (`review_threads_page.graphql`), if there is one.
    pub fn threads_next_page(&self) -> Option<String> {
        self.review_threads.as_ref().and_then(Paged::next_page)
    }
}

mod answers;
pub use answers::*;

#[cfg(test)]
mod tests;
