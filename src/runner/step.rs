//! One run, one tick: observe the world, ask `decide`, perform the answer.

use chrono::Utc;

use super::agent_choice::{NextAgent, next_agent};
use super::branch_hold::Settled;
use super::decide;
use super::decision::{Action, Notice, NoticeKind, Observation, Policy, WorkerOutcome};
use super::state::{Runner, RunnerError};
use crate::domain::{Actor, EndClass, EndReason, ReviewVerdict, Run, RunState, WorkerKind};
use crate::forge::{Forge, PrSnapshot, ReviewDelivery, deliver_review};
use crate::store::{RunMemory, WorkerSession};
use crate::workspace;
use progress::{outcome_of, progress};

impl Runner {
    /// Returns whether something other than waiting happened.
    /// `snapshot` is the run's pull request as the forge showed it this tick (observed for the whole
    /// repository at once); `previous`, as last recorded (`memory.last_snapshot`, read by the caller).
    pub(super) async fn step(
        &mut self,
        run: &Run,
        forge: &Forge,
        memory: RunMemory,
        previous: Option<PrSnapshot>,
        snapshot: Option<PrSnapshot>,
    ) -> Result<bool, RunnerError> {
        let (_, repo) = self.repo_of(run)?;
        let repo = repo.clone();
        if let Some(pr) = &snapshot
            && !pr.head_sha.is_empty()
            && (run.head_sha.as_deref() != Some(pr.head_sha.as_str()) || run.head_seen_at.is_none())
        {
            self.store.set_run_head(run.id, Some(&self.owner), &pr.head_sha).await?;
        }
        let sessions = self.store.worker_sessions(run.id).await?;
        let mut run = run.clone();
        let implementing = |s: &WorkerSession| matches!(s.kind, WorkerKind::Queued | WorkerKind::InProgress);
        if run.state == RunState::Queued && sessions.iter().any(|s| implementing(s) && s.pid.is_some()) {
            // A worker really started and the runner died before moving the run on: move it now, so the
            // run is not started again as if nothing had been done.
            run = self.move_run(&run, RunState::InProgress, "a queued worker had started").await?;
        }
        let run = &run;
        if let Some(pr) = &snapshot
            && pr.state == crate::forge::PrState::Merged
            && previous.as_ref().is_none_or(|p| p.state != crate::forge::PrState::Merged)
        {
            // Before the observation is recorded: the merge is told once, whatever happens next, and
            // its time kept (the fact insights count merged pull requests by).
            self.store.set_merged_at(run.id, Some(&self.owner), pr.observed_at).await?;
            self.record_merged(run, &pr.url).await?;
        }
        if let Some(pr) = &snapshot {
            // Written when the pull request changed (not merely re-observed), for `runs show`.
            if previous.is_none_or(|p| PrSnapshot { observed_at: pr.observed_at, ..p } != *pr) {
                let json = serde_json::to_string(pr)?;
                self.store.set_last_snapshot(run.id, Some(&self.owner), &json).await?;
            }
        }
        // The branch's head (git, off the async threads): whether an in_progress run has commits to open
        // a pull request from, and whether the last worker moved the branch at all. With a pull request
        // its head says the latter, and git is not asked (a git process per run per tick is the tick's
        // largest cost).
        let pr_head = snapshot.as_ref().map(|p| p.head_sha.as_str()).filter(|s| !s.is_empty());
        let ask_git = run.state == RunState::InProgress || pr_head.is_none();
        let branch =
            run.branch_name.clone().filter(|_| ask_git).map(|b| (crate::config::expand_home(&repo.path), b));
        let (branch_head, branch_has_commits) = match branch {
            Some((path, branch)) => {
                let (base, in_progress) = (repo.base.clone(), run.state == RunState::InProgress);
                tokio::task::spawn_blocking(move || {
                    let head = workspace::branch_head(&path, &branch)?;
                    let commits = in_progress
                        && head.is_some()
                        && workspace::branch_has_commits(&path, &branch, &base)?;
                    Ok::<_, workspace::WorkspaceError>((head, commits))
                })
                .await??
            }
            None => (None, false),
        };
        // What the work is judged by: the pull request's head when there is one, else the branch's.
        let head_now = pr_head.map(str::to_string).or(branch_head);
        let worker_alive = sessions.iter().any(|s| s.ended_at.is_none());
        if !worker_alive {
            match self.settle_branch(run, forge, &memory, &sessions).await? {
                Settled::Proceed => {}
                // The forge shows the new head next tick; deciding on this tick's view would judge the
                // worker by a head it has already moved.
                Settled::Pushed => return Ok(true),
                // Another host's clone has the commits: nothing here may act on a branch it lacks.
                Settled::LetGo => return Ok(false),
            }
        }
        if let Some(pr) = &snapshot {
            if self.post_pending_review(run, forge, pr, &sessions).await? {
                // A review just ended: this tick's view lacks the findings just posted (or shows those an
                // earlier attempt posted as someone else's comments), and `run` may have been read
                // before the review's verdict was recorded. Deciding on either judged the head as never
                // reviewed (soak: a run abandoned 3 ms after its review posted a finding). As after
                // replies, the decision waits for the next tick's observation.
                return Ok(true);
            }
            if !worker_alive && self.post_pending_replies(run, forge, pr).await? {
                // This tick's view lacks the replies just posted: deciding on it would send a worker
                // back to comments that are answered.
                return Ok(true);
            }
        }
        let notices_sent = self.store.notice_keys(run.id).await?;
        self.tell_of_stuck_worker(run, &sessions, &notices_sent).await?;
        // What each fix_comments worker was given and answered: its evidence, as a commit is a fix's.
        let offers = if sessions.iter().any(|s| s.kind == WorkerKind::FixComments) {
            self.store.offer_tallies(run.id).await?
        } else {
            Vec::new()
        };
        let (plan, open_question, for_a_person) = self.asks(run, &repo, snapshot.as_ref()).await?;
        let (last_worker, comment_rounds) = progress(&sessions, head_now.as_deref(), &offers, &for_a_person);
        let mut obs = Observation {
            worker_alive,
            free_slot: self.free_slots > 0,
            pr: snapshot.clone(),
            branch_has_commits,
            last_worker,
            ci_triggered_for: memory.ci_triggered_sha.clone(),
            ci_trigger: memory.ci_trigger,
            notices_sent,
            failed_reviews: count(&sessions, |s| {
                s.kind == WorkerKind::PrReview && s.verdict == Some(ReviewVerdict::Fail)
            }),
            conflict_attempts: count(&sessions, |s| {
                s.kind == WorkerKind::FixConflicts && outcome_of(s) != WorkerOutcome::Interrupted
            }),
            comments_at_completion: memory.completion_comment_ids.clone(),
            comment_rounds,
            plan,
            open_question,
            budget: None,
        };
        let policy = Policy {
            max_stuck: self.config.runner.max_stuck,
            max_ci_attempts: self.config.runner.max_ci_attempts,
            required_labels: repo.required_labels.clone(),
            required_checks: repo.required_checks.clone(),
            // Only the configured authors, on every forge: anyone who can comment is not someone whose
            // words an agent should act on.
            trust: repo.trust(),
            retry_backoff: self.config.runner.retry_backoff.std(),
            check_timeout: self.config.runner.check_timeout.std(),
            check_grace: forge.check_grace(),
            max_review_rounds: self.config.runner.max_review_rounds,
            max_conflict_attempts: self.config.runner.max_conflict_attempts,
            question_reminder: self.config.runner.question_reminder.std(),
            words: repo.words(),
        };
        let now = Utc::now();
        // Would a worker start, given a slot? Then, and only then, the caps are read, before the slot is
        // looked at: a run its budget stops is told so, not that it waits for a slot (which, on this host
        // or another, would not let it go on either).
        let would_start = |obs: &Observation| {
            matches!(
                decide(run, &Observation { free_slot: true, ..obs.clone() }, &policy, now).action,
                Action::StartWorker { .. }
            )
        };
        if would_start(&obs) {
            obs.budget = self.budget_block(run, &memory).await?;
        }
        let mut decision = decide(run, &obs, &policy, now);
        let agent = next_agent(&self.config.worker.agents(), obs.last_worker.as_ref());
        if let (Action::StartWorker { .. }, Some(turned)) = (&decision.action, &agent.turned) {
            decision.why = format!("{} ({turned})", decision.why.trim_end_matches('.'));
        }
        // Waiting only for a slot, which this host has none of: the run is let go for a runner with one,
        // on any host, to take (the decision asked again as if a slot were free).
        let wants_slot = !obs.free_slot && !obs.worker_alive && would_start(&obs);
        if memory.last_decision.as_deref() != Some(decision.why.as_str()) {
            tracing::info!(run = run.id, task = %run.task_gid, "{}", decision.why);
            self.store.record_decision(run.id, Some(&self.owner), &decision.why).await?;
        }
        let acted = !decision.is_wait();
        self.perform(run, forge, decision.action, snapshot.as_ref(), &agent).await?;
        if wants_slot {
            self.store.release_run_for_slot(run.id, &self.owner).await?;
        }
        Ok(acted)
    }

    async fn perform(
        &mut self,
        run: &Run,
        forge: &Forge,
        action: Action,
        pr: Option<&PrSnapshot>,
        agent: &NextAgent,
    ) -> Result<(), RunnerError> {
        if action != Action::Wait {
            // What follows may act on the forge, which no lease fences: a runner paused since the tick
            // began, whose run another runner took over meanwhile, must not act at all.
            self.check_lease(run).await?;
        }
        match action {
            Action::Wait => {}
            Action::StartWorker { kind, move_to, ci_attempt } => {
                // The state moves (and a CI attempt counts) only once a worker really started; a launch
                // that fails is recorded as a failed attempt by `launch` and returned as an error.
                if !self.launch(run, kind, agent, forge, pr).await? {
                    return Ok(());
                }
                if let Some(n) = ci_attempt {
                    self.store.set_ci_attempts(run.id, Some(&self.owner), n).await?;
                }
                if let Some(to) = move_to {
                    self.move_run(run, to, &format!("{kind} worker started")).await?;
                }
            }
            Action::Transition { to, pr: pr_ref, notify, stop_worker } => {
                if stop_worker {
                    self.stop_workers_of(run.id);
                }
                if let Some(r) = &pr_ref {
                    self.store.set_run_pr(run.id, Some(&self.owner), &r.url, r.number).await?;
                }
                // What the tracker is owed, and the notice, are recorded (in their outboxes) before the
                // state changes, so a crash in between re-sends nothing and loses nothing: the keys make
                // them once-only.
                self.record_writebacks(run, pr_ref.as_ref().filter(|_| to == RunState::Pr), notify.as_ref())
                    .await?;
                if let Some(n) = &notify {
                    self.notify(run, n).await?;
                }
                let why = match (&pr_ref, &notify) {
                    (Some(r), _) => format!("{} {}", self.config.words_for(run.repo.as_deref()).noun, r.url),
                    (None, Some(n)) => n.text.clone(),
                    (None, None) => format!("runner decided {to}"),
                };
                if to == RunState::Complete {
                    // Exactly the comments of the observation that decided this: one posted since (even
                    // in the same second, even before this write) is new to the completed run.
                    let seen: Vec<String> =
                        pr.map(|p| p.comments.iter().map(|c| c.id.clone()).collect()).unwrap_or_default();
                    self.store
                        .complete_run_if(run.id, run.state, Some(&self.owner), Actor::Runner, &why, &seen)
                        .await?;
                } else {
                    self.move_run(run, to, &why).await?;
                }
                if to == RunState::Complete
                    && self.repo_of(run)?.1.mark_ready
                    && let Some(pr) = pr.filter(|p| p.draft)
                {
                    forge.mark_ready(run, pr).await?;
                }
                if to == RunState::Complete || to == RunState::Abandoned {
                    // Nothing to drive until the world changes (the store frees an abandoned run's lease
                    // itself): another host's runner may watch a completed run too.
                    self.store.release_run(run.id, &self.owner).await?;
                    self.clean_worktree(run).await;
                }
            }
            Action::OpenPr => {
                let task = self.store.task(&run.task_gid).await?;
                let pushed = chrono::Utc::now();
                let closes = self.outbox.closing_reference(task.source.as_deref(), task.task_gid.as_str());
                let r = forge.open_pr(run, &task, closes.as_deref()).await?;
                // Recorded at once: a remote forge is observed by pull request number.
                self.store.set_run_pr(run.id, Some(&self.owner), &r.url, r.number).await?;
                if forge.pushes_branches() {
                    self.store.set_pushed_at(run.id, Some(&self.owner), pushed).await?;
                }
                tracing::info!(run = run.id, "opened pull request {}", r.url);
            }
            Action::AddLabels { labels } => forge.add_labels(run, &labels).await?,
            Action::TriggerCi { sha } => {
                let outcome = forge.trigger_ci(run, &sha).await?;
                self.store.set_ci_triggered(run.id, Some(&self.owner), &sha, outcome).await?;
            }
            Action::Notify { notice } => {
                // A plan or a question is the tracker's to hear too, recorded before the notice.
                self.record_writebacks(run, None, Some(&notice)).await?;
                self.notify(run, &notice).await?
            }
        }
        Ok(())
    }

    /// Posts the findings of a `pr_review` worker that ended with a verdict and whose review is not on
    /// the pull request yet, once: a review an attempt posted without recording it (a crash, or an
    /// error answered for a review GitHub applied) is found by its marker and recorded instead.
    /// Returns whether there was such a review to deliver (this tick's view then lacks or misreads it).
    async fn post_pending_review(
        &self,
        run: &Run,
        forge: &Forge,
        pr: &PrSnapshot,
        sessions: &[WorkerSession],
    ) -> Result<bool, RunnerError> {
        let pending = sessions.iter().rev().find(|s| {
            s.kind == WorkerKind::PrReview
                && s.verdict.is_some()
                && s.ended_at.is_some()
                && s.review_posted_at.is_none()
        });
        let Some(session) = pending else { return Ok(false) };
        let review = session
            .result_json
            .as_deref()
            .and_then(|j| serde_json::from_str::<crate::worker::result::ReviewResult>(j).ok());
        if let Some(mut review) = review {
            // The agent's words go to the forge: a secret it came across must not.
            review.summary = self.redactor.redact(&review.summary);
            for f in &mut review.findings {
                f.body = self.redactor.redact(&f.body);
            }
            let delivered = deliver_review(forge, &self.store, run, pr, session.id, &review).await?;
            if delivered == ReviewDelivery::MayStillLand {
                return Ok(true); // not posted, not to be recorded as posted: the next view decides
            }
        }
        self.store.set_review_posted(session.id).await?;
        Ok(true)
    }

    /// A worker killed by the watchdog is told to the human once, with how many attempts remain.
    async fn tell_of_stuck_worker(
        &self,
        run: &Run,
        sessions: &[WorkerSession],
        sent: &[String],
    ) -> Result<(), RunnerError> {
        let Some(last) = sessions.iter().rev().find(|s| s.ended_at.is_some()) else {
            return Ok(());
        };
        let what = match last.end_reason {
            Some(EndReason::IdleTimeout) => format!("no output for {}", self.config.worker.idle_timeout),
            Some(EndReason::HardTimeout) => format!("it ran past {}", self.config.worker.hard_timeout),
            Some(r) if r.class() == EndClass::Stuck => r.describe().to_string(),
            _ => return Ok(()),
        };
        let key = format!("stuck:{}", last.id);
        if sent.contains(&key) {
            return Ok(());
        }
        // The count as stored now: `run` was read before this worker's end was counted (the end lands
        // between the tick's read of the run and its read of the sessions), so its copy says one less.
        let stuck = self.store.run(run.id).await?.worker_stuck_count;
        let text = format!(
            "The {} worker of run {} (task {}) was stopped: {what}. Stuck attempts: {} of {}; see `executor logs {} --kind {}`.",
            last.kind.as_str(),
            run.id,
            run.task_gid,
            stuck,
            self.config.runner.max_stuck,
            run.task_gid,
            last.kind.as_str()
        );
        self.notify(run, &Notice { kind: NoticeKind::NeedsHuman, key, text }).await
    }

    /// Fails with `LeaseLost` unless this runner still holds the run's live lease (by the database's
    /// clock), before an action that the database cannot fence.
    pub(super) async fn check_lease(&self, run: &Run) -> Result<(), RunnerError> {
        if self.is_lost() || !self.store.holds_lease(run.id, &self.owner).await? {
            return Err(crate::store::StoreError::LeaseLost(run.id).into());
        }
        Ok(())
    }

    /// Moves a run on, as the lease holder, recording why.
    async fn move_run(&self, run: &Run, to: RunState, why: &str) -> Result<Run, RunnerError> {
        Ok(self.store.set_run_state_if(run.id, run.state, to, Some(&self.owner), Actor::Runner, why).await?)
    }

    /// Removes a finished run's worktree when nothing would be lost; otherwise keeps it and says why.
    async fn clean_worktree(&self, run: &Run) {
        let (Some(path), Some(branch), Ok((_, repo))) =
            (&run.worktree_path, &run.branch_name, self.repo_of(run))
        else {
            return;
        };
        let repo_path = crate::config::expand_home(&repo.path);
        // The database is writable by more than executor: a worktree path is used only under the root.
        // A path elsewhere is another host's worktree (that host's sweep removes it), or was written by
        // someone else: not touched here either way.
        let resolved = match workspace::path_under(&self.config.worktrees_root(), std::path::Path::new(path))
        {
            Ok(resolved) => resolved,
            Err(e) => {
                tracing::debug!(run = run.id, "not removing the run's recorded worktree here: {e}");
                return;
            }
        };
        let wt = workspace::Worktree { path: resolved, branch: branch.clone(), reused: true };
        let outcome = tokio::task::spawn_blocking(move || workspace::remove_if_safe(&repo_path, &wt)).await;
        let note = match outcome {
            Ok(Ok(workspace::Removal::Kept { reason })) => Some(format!("worktree {path} kept: {reason}")),
            Ok(Err(e)) => Some(format!("worktree {path} kept: {e}")),
            _ => None,
        };
        if let Some(note) = note {
            let _ = self.store.record_note(Actor::Runner, Some(&run.task_gid), Some(run.id), &note).await;
        }
    }
}

fn count(sessions: &[WorkerSession], pred: impl Fn(&WorkerSession) -> bool) -> u32 {
    u32::try_from(sessions.iter().filter(|s| pred(s)).count()).unwrap_or(u32::MAX)
}

mod asks;
mod progress;

#[cfg(test)]
mod budget_tests;
#[cfg(test)]
mod review_wait_tests;
#[cfg(test)]
mod stuck_tests;
#[cfg(test)]
mod tests;
