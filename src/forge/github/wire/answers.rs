//! The whole `data` of each GraphQL document, and of each mutation, as serde types: what a request
//! returns before the pull request inside it is mapped (see the parent module).

use std::collections::HashMap;

use serde::Deserialize;

use super::{Nodes, Paged, WireCheckContext, WireNodeId, WirePr, WireRateLimit, WireThread, present};

// ---- Whole answers ----------------------------------------------------------------------------------

/// The `data` of the batch query: `repository { pr0: pullRequest(...) {...PrFields} pr1: ... }`. A
/// number that names no pull request answers null (and an entry in `errors`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireBatch {
    #[serde(deserialize_with = "present")]
    pub rate_limit: Option<WireRateLimit>,
    #[serde(deserialize_with = "present")]
    pub repository: Option<HashMap<String, Option<WirePr>>>,
}

/// The `data` of `check_contexts_page.graphql`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireContextsPage {
    #[serde(deserialize_with = "present")]
    pub rate_limit: Option<WireRateLimit>,
    #[serde(deserialize_with = "present")]
    pub repository: Option<PageRepository<ContextsPagePr>>,
}

/// The `data` of `review_threads_page.graphql`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireThreadsPage {
    #[serde(deserialize_with = "present")]
    pub rate_limit: Option<WireRateLimit>,
    #[serde(deserialize_with = "present")]
    pub repository: Option<PageRepository<ThreadsPagePr>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "P: Deserialize<'de>"))]
pub struct PageRepository<P> {
    #[serde(deserialize_with = "present")]
    pub pull_request: Option<P>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextsPagePr {
    #[serde(deserialize_with = "present")]
    pub status_check_rollup: Option<ContextsPageRollup>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ContextsPageRollup {
    pub contexts: Paged<WireCheckContext>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadsPagePr {
    pub review_threads: Paged<WireThread>,
}

/// One page's items and the cursor of the page after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

impl<T> From<Paged<T>> for Page<T> {
    fn from(paged: Paged<T>) -> Page<T> {
        let next = paged.next_page();
        Page { items: paged.into_items().collect(), next }
    }
}

impl WireContextsPage {
    /// The page, or `None` when the repository, the pull request or its rollup is gone (a push moved
    /// the head between pages, or access was lost): the first page no longer belongs with it, so the
    /// caller treats the snapshot as unusable this tick.
    pub fn into_page(self) -> Option<Page<WireCheckContext>> {
        let rollup = self.repository?.pull_request?.status_check_rollup?;
        Some(rollup.contexts.into())
    }
}

impl WireThreadsPage {
    /// The page, or `None` when the repository or the pull request is gone.
    pub fn into_page(self) -> Option<Page<WireThread>> {
        Some(self.repository?.pull_request?.review_threads.into())
    }
}

// ---- Mutation answers -------------------------------------------------------------------------------

/// The `data` of `add_review.graphql`: the posted review and its line comments, whose ids executor
/// records as an agent's.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireAddReview {
    #[serde(deserialize_with = "present")]
    pub add_pull_request_review: Option<WireAddReviewPayload>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireAddReviewPayload {
    #[serde(deserialize_with = "present")]
    pub pull_request_review: Option<WirePostedReview>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WirePostedReview {
    pub id: String,
    pub comments: Nodes<WireNodeId>,
}

impl WireAddReview {
    /// The review's id and its comments' ids; `None` when GitHub answered without a review.
    pub fn posted_ids(self) -> Option<(String, Vec<String>)> {
        let review = self.add_pull_request_review?.pull_request_review?;
        Some((review.id, review.comments.into_items().map(|c| c.id).collect()))
    }
}

/// The `data` of `reply_to_thread.graphql`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireReplyToThread {
    #[serde(deserialize_with = "present")]
    pub add_pull_request_review_thread_reply: Option<WireReplyPayload>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WireReplyPayload {
    #[serde(deserialize_with = "present")]
    pub comment: Option<WireNodeId>,
}

impl WireReplyToThread {
    /// The new comment's id; `None` when GitHub answered without one.
    pub fn comment_id(self) -> Option<String> {
        self.add_pull_request_review_thread_reply?.comment.map(|c| c.id)
    }
}

/// The `data` of `mark_ready.graphql`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireMarkReady {
    #[serde(deserialize_with = "present")]
    pub mark_pull_request_ready_for_review: Option<WireMarkReadyPayload>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireMarkReadyPayload {
    #[serde(deserialize_with = "present")]
    pub pull_request: Option<WireIsDraft>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireIsDraft {
    pub is_draft: bool,
}

impl WireMarkReady {
    /// Whether the pull request is now ready for review (out of draft), as GitHub answered.
    pub fn is_ready(&self) -> bool {
        self.mark_pull_request_ready_for_review
            .as_ref()
            .and_then(|p| p.pull_request.as_ref())
            .is_some_and(|pr| !pr.is_draft)
    }
}
