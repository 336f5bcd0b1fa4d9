//! A merge request whose lists outgrow the batch query's pages (100 labels, 100 jobs in the head
//! pipeline, 100 discussions, or 100 notes in one discussion) is read on, page after page, before it is
//! observed: a required job, a trusted reviewer's thread or executor's own label past the hundredth is
//! still seen. Discussions are read again as the merge request's notes, each naming its discussion (GitLab
//! pages a discussion's notes only under the discussions' own page).

use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::GitLabForge;
use super::wire::{Nodes, WireDiscussion, WireJob, WireLabel, WireMr, WireNote};
use crate::forge::ForgeError;
use crate::gitlab::GitLabError;

const NOTES_PAGE: &str = include_str!("graphql/notes_page.graphql");
const JOBS_PAGE: &str = include_str!("graphql/jobs_page.graphql");
const LABELS_PAGE: &str = include_str!("graphql/labels_page.graphql");
/// Pages read of one list at most (10,000 items): a merge request past that is observed with what they
/// hold, and the log says so.
const MAX_PAGES: usize = 100;

impl GitLabForge {
    /// Reads the rest of every list of `mr` that GitLab said goes on.
    pub(super) async fn read_on(&self, mr: &mut WireMr) -> Result<(), ForgeError> {
        let iid = mr.iid.clone();
        if let Some(labels) = &mut mr.labels
            && let Some(after) = labels.next_page().map(str::to_string)
        {
            let more: Vec<WireLabel> =
                self.pages(LABELS_PAGE, &iid, Some(after), "/project/mergeRequest/labels", None).await?;
            labels.nodes.extend(more.into_iter().map(Some));
        }
        if let Some(pipeline) = &mut mr.head_pipeline
            && let Some(jobs) = &mut pipeline.jobs
            && let Some(after) = jobs.next_page().map(str::to_string)
        {
            let same = ("/project/mergeRequest/headPipeline/id", pipeline.id.as_str());
            let at = "/project/mergeRequest/headPipeline/jobs";
            let more: Vec<WireJob> = self.pages(JOBS_PAGE, &iid, Some(after), at, Some(same)).await?;
            jobs.nodes.extend(more.into_iter().map(Some));
        }
        let discussions_go_on = mr.discussions.as_ref().is_some_and(|d| {
            d.has_more() || d.nodes.iter().flatten().any(|discussion| discussion.notes.has_more())
        });
        if discussions_go_on {
            let notes: Vec<WireNote> =
                self.pages(NOTES_PAGE, &iid, None, "/project/mergeRequest/notes", None).await?;
            mr.discussions = Some(Nodes::of(discussions_of(notes)));
        }
        Ok(())
    }

    /// The items of a connection at `at` in `document`'s answer, page after page from `after`; `same`: a
    /// value each page must show as the first did (else the list changed under the reading).
    async fn pages<T: DeserializeOwned>(
        &self,
        document: &str,
        iid: &str,
        mut after: Option<String>,
        at: &str,
        same: Option<(&str, &str)>,
    ) -> Result<Vec<T>, ForgeError> {
        let mut all = Vec::new();
        for _ in 0..MAX_PAGES {
            let data = self
                .client
                .graphql(document, json!({ "path": self.project, "iid": iid, "after": after }))
                .await?;
            if let Some((pointer, expected)) = same
                && data.pointer(pointer).and_then(Value::as_str) != Some(expected)
            {
                return Err(malformed(iid, "its head pipeline changed while its jobs were read"));
            }
            let page: Nodes<T> = data
                .pointer(at)
                .filter(|v| !v.is_null())
                .map(|v| serde_json::from_value(v.clone()))
                .transpose()
                .map_err(|e| malformed(iid, &e.to_string()))?
                .ok_or_else(|| malformed(iid, &format!("no {at} in the answer")))?;
            let next = page.next_page().map(str::to_string);
            all.extend(page.into_iter());
            match next {
                Some(cursor) => after = Some(cursor),
                None => return Ok(all),
            }
        }
        tracing::warn!(
            iid,
            at,
            "GitLab merge request has more than {MAX_PAGES} pages of one list; read up to there"
        );
        Ok(all)
    }
}

/// The discussions `notes` are in, in the order each first appears, each with its notes oldest first
/// (by creation, then id: the opening note of a thread comes first whatever order GitLab pages in).
fn discussions_of(notes: Vec<WireNote>) -> Vec<WireDiscussion> {
    let mut order: Vec<String> = Vec::new();
    let mut found: HashMap<String, WireDiscussion> = HashMap::new();
    for mut note in notes {
        let Some(discussion) = note.discussion.take() else { continue };
        let entry = found.entry(discussion.id.clone()).or_insert_with(|| {
            order.push(discussion.id.clone());
            WireDiscussion { notes: Nodes::of(Vec::new()), ..discussion }
        });
        entry.notes.nodes.push(Some(note));
    }
    order
        .into_iter()
        .filter_map(|id| found.remove(&id))
        .map(|mut d| {
            let mut notes: Vec<WireNote> =
                std::mem::replace(&mut d.notes, Nodes::of(Vec::new())).into_iter().collect();
            notes.sort_by_key(|n| (n.created_at, note_number(&n.id)));
            d.notes = Nodes::of(notes);
            d
        })
        .collect()
}

/// A note's number, for order (`gid://gitlab/DiffNote/12` → 12).
fn note_number(gid: &str) -> i64 {
    super::wire::rest_id(gid).parse().unwrap_or(i64::MAX)
}

fn malformed(iid: &str, reason: &str) -> ForgeError {
    ForgeError::GitLab(GitLabError::Malformed {
        path: format!("/api/graphql (merge request !{iid})"),
        reason: reason.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(id: i64, discussion: &str, at: &str) -> WireNote {
        serde_json::from_value(json!({
            "id": format!("gid://gitlab/Note/{id}"), "body": format!("note {id}"), "system": false,
            "author": { "username": "alex" }, "position": null, "createdAt": at,
            "discussion": { "id": format!("gid://gitlab/Discussion/{discussion}"), "resolvable": true, "resolved": false },
        }))
        .unwrap()
    }

    #[test]
    fn notes_group_into_their_discussions_in_order() {
        let t = "2026-12-05T10:00:00Z";
        let later = "2026-12-05T10:00:01Z";
        // A reply paged before its thread's opening note (same second, higher id), and another thread between.
        let notes = vec![note(3, "a", later), note(2, "b", t), note(11, "a", t), note(10, "a", t)];
        let discussions = discussions_of(notes);
        let ids: Vec<(String, Vec<String>)> =
            discussions.into_iter().map(|d| (d.id, d.notes.into_iter().map(|n| n.id).collect())).collect();
        assert_eq!(
            ids,
            vec![
                (
                    "gid://gitlab/Discussion/a".into(),
                    vec![
                        "gid://gitlab/Note/10".into(),
                        "gid://gitlab/Note/11".into(),
                        "gid://gitlab/Note/3".into()
                    ]
                ),
                ("gid://gitlab/Discussion/b".into(), vec!["gid://gitlab/Note/2".into()]),
            ]
        );
    }
}
