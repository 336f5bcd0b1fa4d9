//! What the runner writes on GitLab: the branch, the draft merge request, labels, pipelines, notes
//! (notices and agents' replies, recorded by id as executor's; an acknowledged discussion resolved), the
//! self-review, and the ready mark. A write whose answer was lost (a 5xx, a connection gone after
//! sending) is looked for on the merge request before it is ever sent again.

use std::collections::HashMap;

use reqwest::Method;
use serde_json::{Value, json};

use super::{GitLabForge, Observed};
use crate::domain::{ChangeWords, CiTrigger, Run, Task};
use crate::forge::github::writes::{pr_body, push_merging, title};
use crate::forge::job_logs::{LOG_BYTES, failed_job_logs};
use crate::forge::{CommentPost, ForgeError, PrRef, PrSnapshot, review_summary};
use crate::gitlab::{GitLabError, segment};
use crate::worker::result::ReviewResult;

/// How much of a failed job's log a `fix_ci` worker is shown: its last lines, within a byte bound.
/// GitLab's mark of a draft, at the start of the title.
const DRAFT: &str = "Draft: ";

impl GitLabForge {
    /// Pushes the run's branch to `repos.NAME.remote` (never forced), the token handed to git through
    /// its environment ([`crate::gitlab::GitLabClient::git_env`]). When someone else pushed to it
    /// meanwhile (a human's fix on the merge request), their commits are merged into the run's worktree
    /// first and the push is tried once more; a merge that conflicts stays the push's error.
    pub async fn push(&self, run: &Run) -> Result<(), ForgeError> {
        push_merging(&self.repo, self.worktrees_root.as_deref(), run, self.client.git_env()).await
    }

    /// The worktree root (`workspace.root`) under which a run's recorded worktree may be merged into.
    pub fn with_worktrees_root(mut self, root: std::path::PathBuf) -> Self {
        self.worktrees_root = Some(root);
        self
    }

    /// Pushes the branch and opens a draft merge request for it, or finds the one already open (a
    /// runner that died after opening it, a human who opened it, a create whose answer was lost: GitLab
    /// keeps one open merge request per source branch).
    pub async fn open_pr(&self, run: &Run, task: &Task, closes: Option<&str>) -> Result<PrRef, ForgeError> {
        let branch = run.branch_name.clone().ok_or(ForgeError::NoBranch(run.id))?;
        self.push(run).await?;
        if let Some(existing) = self.open_mr_of(&branch).await? {
            return Ok(existing);
        }
        let body = json!({
            "source_branch": branch,
            "target_branch": self.repo.base,
            "title": format!("{DRAFT}{}", title(task)),
            "description": pr_body(run, task, self.closing_keyword(closes).as_deref(), ChangeWords::MERGE_REQUEST.noun),
        });
        let path = format!("{}/merge_requests", self.project_path());
        match self.client.rest(Method::POST, &path, Some(&body)).await {
            Ok(created) => mr_ref(&created),
            // Created after all, or by someone else meanwhile (409: one open merge request per branch).
            Err(e) if e.is_answer_lost() || matches!(e, GitLabError::Status { status: 409, .. }) => {
                tokio::time::sleep(if e.is_answer_lost() { self.landing_time } else { Default::default() })
                    .await;
                self.open_mr_of(&branch).await?.ok_or(ForgeError::GitLab(e))
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn open_mr_of(&self, branch: &str) -> Result<Option<PrRef>, ForgeError> {
        let path =
            format!("{}/merge_requests?state=opened&source_branch={}", self.project_path(), segment(branch));
        let list = self.client.rest(Method::GET, &path, None).await?;
        list.as_array().and_then(|l| l.first()).map(mr_ref).transpose()
    }

    /// GitLab's closing pattern for issue `closes` (`group/project#N`): `Closes #N` in this project.
    fn closing_keyword(&self, closes: Option<&str>) -> Option<String> {
        let (project, number) = closes?.rsplit_once('#')?;
        Some(match project.eq_ignore_ascii_case(&self.project) {
            true => format!("Closes #{number}"),
            false => format!("Closes {project}#{number}"),
        })
    }

    /// Adds labels (GitLab keeps the ones already there): safe to repeat.
    pub async fn add_labels(&self, run: &Run, labels: &[String]) -> Result<(), ForgeError> {
        let iid = run.pr_number.ok_or(ForgeError::NoPr(run.id))?;
        let path = format!("{}/merge_requests/{iid}", self.project_path());
        self.client.rest(Method::PUT, &path, Some(&json!({ "add_labels": labels.join(",") }))).await?;
        Ok(())
    }

    /// Takes the merge request out of draft: its title without the `Draft:` mark. Safe to repeat.
    pub async fn mark_ready(&self, run: &Run, pr: &PrSnapshot) -> Result<(), ForgeError> {
        let observed = self.observed(run, pr.number).await?;
        let path = format!("{}/merge_requests/{}", self.project_path(), pr.number);
        let title = undrafted(&observed.title);
        let updated = self.client.rest(Method::PUT, &path, Some(&json!({ "title": title }))).await?;
        if updated.get("draft").and_then(Value::as_bool) == Some(true) {
            return Err(malformed("GitLab left the merge request a draft"));
        }
        self.forget_observation(pr.number);
        Ok(())
    }

    /// Starts CI at the head as `repos.NAME.ci_trigger` says: nothing (a push starts a pipeline), a new
    /// pipeline on the branch (`pipeline`), or a retry of the head pipeline's failed jobs (`retry`).
    /// Starts CI as `ci_trigger` says. A trigger whose answer was lost counts as done: the pipeline it
    /// may have started shows at the head in the next observation, which a second trigger would only
    /// double; if none ever shows, the wait for checks ends in the human's notice as for any trigger.
    pub async fn trigger_ci(&self, run: &Run, sha: &str) -> Result<CiTrigger, ForgeError> {
        let sent = |answer: Result<serde_json::Value, GitLabError>, done: CiTrigger| match answer {
            Ok(_) => Ok(done),
            Err(e) if e.is_answer_lost() => {
                tracing::info!(
                    run = run.id,
                    "GitLab's answer to the CI trigger was lost ({e}); taken as done"
                );
                Ok(done)
            }
            Err(e) => Err(ForgeError::from(e)),
        };
        match self.repo.ci_trigger.as_str() {
            "pipeline" => {
                let branch = run.branch_name.clone().ok_or(ForgeError::NoBranch(run.id))?;
                let path = format!("{}/pipeline?ref={}", self.project_path(), segment(&branch));
                sent(self.client.rest(Method::POST, &path, None).await, CiTrigger::Dispatched)
            }
            "retry" => {
                let iid = run.pr_number.ok_or(ForgeError::NoPr(run.id))?;
                let Some(pipeline) = self.observed(run, iid).await?.head_pipeline else {
                    tracing::warn!(
                        run = run.id,
                        "repos.{}.ci_trigger = \"retry\" but no pipeline ran at {sha}; waiting",
                        self.repo_name
                    );
                    return Ok(CiTrigger::NothingToRerun);
                };
                let path = format!("{}/pipelines/{pipeline}/retry", self.project_path());
                sent(self.client.rest(Method::POST, &path, None).await, CiTrigger::Rerun)
            }
            _ => {
                tracing::info!(
                    run = run.id,
                    "no pipeline at {sha} yet; repos.{}.ci_trigger is empty (a push starts one): waiting",
                    self.repo_name
                );
                Ok(CiTrigger::NotConfigured)
            }
        }
    }

    /// Posts a note: a reply in the discussion of `reply_to` when that is a review thread, else a note
    /// on the merge request. An agent's (or executor's) note is recorded by id. An acknowledgement in a
    /// thread then resolves it, where the token may (a refusal is logged: the acknowledgement already
    /// settles it for executor).
    pub async fn comment(&self, run: &Run, c: &CommentPost<'_>) -> Result<String, ForgeError> {
        let iid = run.pr_number.ok_or(ForgeError::NoPr(run.id))?;
        let discussion = match c.reply_to {
            Some(parent) if self.store.run(run.id).await?.thread_id.as_deref() != Some(parent) => {
                let observed = self.observed(run, iid).await?;
                let found = observed.discussion_of.get(parent).cloned();
                let found = found.ok_or_else(|| ForgeError::UnknownComment(parent.to_string()))?;
                observed.resolvable.contains(&found).then_some(found)
            }
            _ => None,
        };
        let mr = format!("{}/merge_requests/{iid}", self.project_path());
        let path = match &discussion {
            Some(d) => format!("{mr}/discussions/{}/notes", segment(d)),
            None => format!("{mr}/notes"),
        };
        let id = match self.client.rest(Method::POST, &path, Some(&json!({ "body": c.body }))).await {
            Ok(posted) => note_id(&posted)?,
            Err(e) if e.is_answer_lost() => {
                self.landed_after_all(run, c, discussion.as_deref()).await?.ok_or(ForgeError::GitLab(e))?
            }
            Err(e) => return Err(e.into()),
        };
        if c.by_agent {
            self.store.record_agent_comment(run.id, &id, c.reply_to).await?;
        }
        self.forget_observation(iid);
        if let Some(d) = discussion.filter(|_| c.body.trim_start().starts_with(crate::forge::ACK_PREFIX)) {
            self.resolve(run, &mr, &d).await?;
        }
        Ok(id)
    }

    async fn resolve(&self, run: &Run, mr: &str, discussion: &str) -> Result<(), ForgeError> {
        let path = format!("{mr}/discussions/{}?resolved=true", segment(discussion));
        match self.client.rest(Method::PUT, &path, None).await {
            Ok(_) => Ok(()),
            Err(e @ (GitLabError::Forbidden { .. } | GitLabError::NotFound { .. })) => {
                tracing::info!(run = run.id, "the acknowledged discussion stays unresolved on GitLab: {e}");
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The note `c` as GitLab carried it out after all, for a post whose answer was lost: looked for once
    /// it could have landed (`request_timeout` later). Found, it is the note's id; not found, the post
    /// did not go through.
    async fn landed_after_all(
        &self,
        run: &Run,
        c: &CommentPost<'_>,
        discussion: Option<&str>,
    ) -> Result<Option<String>, ForgeError> {
        tracing::info!(
            run = run.id,
            "GitLab's answer to a note was lost; looking for it before posting again"
        );
        tokio::time::sleep(self.landing_time).await;
        let Some(iid) = run.pr_number else { return Ok(None) };
        self.forget_observation(iid);
        let observed = self.observed(run, iid).await?;
        let taken = self.store.agent_comments(&[run.id]).await?;
        let landed = observed.snapshot.comments.iter().find(|seen| {
            seen.body == c.body
                && !taken.contains_key(&seen.id)
                && match discussion {
                    Some(d) => observed.discussion_of.get(&seen.id).map(String::as_str) == Some(d),
                    None => seen.thread_id.is_none(),
                }
        });
        Ok(landed.map(|c| c.id.clone()))
    }

    /// A review as one note on the merge request, each finding with a line first as a discussion on
    /// that line of the diff (GitLab refuses a line outside the diff: that finding goes into the note).
    /// The note comes last and alone ends with `marker`, so the review counts as posted only once all
    /// of it is; each finding ends with its part marker ([`part_marker`]), and one already on the merge
    /// request (an attempt whose later part's answer was lost) is recorded, not posted again. Every id
    /// is recorded as executor's.
    pub async fn post_review(
        &self,
        run: &Run,
        pr: &PrSnapshot,
        review: &ReviewResult,
        marker: &str,
    ) -> Result<(), ForgeError> {
        let observed = self.observed(run, pr.number).await?;
        let mr = format!("{}/merge_requests/{}", self.project_path(), pr.number);
        let mut in_note = String::new();
        for f in &review.findings {
            let (Some(path), Some(line)) = (&f.path, f.line.filter(|l| *l > 0)) else {
                if let Some(path) = &f.path {
                    in_note.push_str(&format!("\n\n- `{path}`: {}", f.body));
                }
                continue;
            };
            let body = format!("{}\n\n{}", f.body, part_marker(marker));
            if let Some(earlier) = observed.snapshot.comments.iter().find(|c| c.body.trim_end() == body) {
                self.store.record_agent_comment(run.id, &earlier.id, None).await?;
                continue;
            }
            let Some(refs) = &observed.diff_refs else {
                in_note.push_str(&format!("\n\n- `{path}` line {line}: {}", f.body));
                continue;
            };
            let position = json!({
                "position_type": "text",
                "base_sha": refs.base_sha.as_deref().unwrap_or(&refs.start_sha),
                "start_sha": refs.start_sha,
                "head_sha": refs.head_sha,
                "new_path": path,
                "new_line": line,
            });
            let posted = self
                .client
                .rest(
                    Method::POST,
                    &format!("{mr}/discussions"),
                    Some(&json!({ "body": body, "position": position })),
                )
                .await;
            match posted {
                Ok(d) => {
                    let id = d
                        .pointer("/notes/0/id")
                        .map(id_text)
                        .ok_or_else(|| malformed("a discussion without notes"))?;
                    self.store.record_agent_comment(run.id, &id, None).await?;
                }
                Err(GitLabError::Status { status: 400, .. }) => {
                    in_note.push_str(&format!("\n\n- `{path}` line {line}: {}", f.body));
                }
                Err(e) if e.is_answer_lost() => return self.record_marked(run, marker, e).await,
                Err(e) => return Err(e.into()),
            }
        }
        let body = format!("{}{in_note}\n\n{marker}", review_summary(review));
        match self.client.rest(Method::POST, &format!("{mr}/notes"), Some(&json!({ "body": body }))).await {
            Ok(note) => self.store.record_agent_comment(run.id, &note_id(&note)?, None).await?,
            Err(e) if e.is_answer_lost() => return self.record_marked(run, marker, e).await,
            Err(e) => return Err(e.into()),
        }
        self.forget_observation(pr.number);
        Ok(())
    }

    /// After a review part's answer was lost: what of the review is on the merge request (once it could
    /// have landed) is recorded as executor's; the runner's next look finds it by its marker and posts
    /// nothing twice.
    async fn record_marked(&self, run: &Run, marker: &str, lost: GitLabError) -> Result<(), ForgeError> {
        tokio::time::sleep(self.landing_time).await;
        let seen = self.snapshot_asked_again(run).await?;
        let part = part_marker(marker);
        for c in seen
            .iter()
            .flat_map(|pr| &pr.comments)
            .filter(|c| c.body.contains(marker) || c.body.contains(&part))
        {
            self.store.record_agent_comment(run.id, &c.id, None).await?;
        }
        Err(ForgeError::GitLab(lost))
    }

    /// The last lines of each failed job's log at the head, by job name.
    pub async fn failed_check_logs(&self, pr: &PrSnapshot) -> Result<HashMap<String, String>, ForgeError> {
        failed_job_logs(pr, |job| async move {
            Ok(self.client.text(&format!("{}/jobs/{job}/trace", self.project_path()), LOG_BYTES).await?)
        })
        .await
    }

    /// The merge request's last observation, asked for when none is kept.
    async fn observed(&self, run: &Run, iid: i64) -> Result<Observed, ForgeError> {
        if let Some(o) = self.cached(iid) {
            return Ok(o);
        }
        self.snapshots_unlogged(std::slice::from_ref(run)).await?.take(run.id)?;
        self.cached(iid).ok_or(ForgeError::NoPr(run.id))
    }
}

/// A title without GitLab's draft marks (`Draft:`, `[Draft]`, `(Draft)`, and the older `WIP:`).
fn undrafted(title: &str) -> String {
    let mut t = title.trim_start();
    loop {
        let lower = t.to_ascii_lowercase();
        let Some(mark) =
            ["draft:", "[draft]", "(draft)", "wip:", "[wip]"].iter().find(|m| lower.starts_with(*m))
        else {
            return t.to_string();
        };
        t = t[mark.len()..].trim_start();
    }
}

fn mr_ref(mr: &Value) -> Result<PrRef, ForgeError> {
    match (mr.get("iid").and_then(Value::as_i64), mr.get("web_url").and_then(Value::as_str)) {
        (Some(number), Some(url)) => Ok(PrRef { number, url: url.to_string() }),
        _ => Err(malformed("a merge request without iid or web_url")),
    }
}

fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn note_id(note: &Value) -> Result<String, ForgeError> {
    note.get("id").map(id_text).ok_or_else(|| malformed("GitLab did not say the new note's id"))
}

fn malformed(what: &str) -> ForgeError {
    ForgeError::GitLab(GitLabError::Malformed { path: String::new(), reason: what.to_string() })
}

/// What ends each finding of the review `marker` ends: `<!-- executor review N finding -->`. It does not
/// hold `marker`, so a review whose note was not posted yet is not taken for posted.
fn part_marker(marker: &str) -> String {
    format!("{} finding -->", marker.trim_end_matches("-->").trim_end())
}

#[cfg(test)]
mod tests {
    #[test]
    fn draft_marks_come_off() {
        assert_eq!(super::undrafted("Draft: Fix it"), "Fix it");
        assert_eq!(super::undrafted("[Draft] WIP: Fix it"), "Fix it");
        assert_eq!(super::undrafted("Fix the draft"), "Fix the draft");
    }
}
