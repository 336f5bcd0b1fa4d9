use chrono::{DateTime, Utc};

use super::{IllegalTransition, TaskGid, illegal};

/// Where an incoming task stands in triage (table `executor_queue`, column `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueStatus {
    /// Taken in, not yet looked at by the analyzer.
    Pending,
    /// The analyzer wants a human to look before it can be approved.
    ForReview,
    /// Analyzed and feasible; waiting for a human's go.
    AwaitingGo,
    /// A human said go: the runner turns it into a run.
    Approved,
    /// Filtered out or judged not worth doing.
    Skip,
    /// Its run finished.
    Done,
}

super::named_enum!(QueueStatus, "queue status", {
    Pending => "pending",
    ForReview => "for_review",
    AwaitingGo => "awaiting_go",
    Approved => "approved",
    Skip => "skip",
    Done => "done",
});

/// Who made the last decision to skip a task (column `executor_queue.skipped_by`): a fact recorded
/// with the skip, never read back from its reason. `executor reanalyze` counts a skip under it and
/// leaves a human's skip alone unless asked (`--rule human`): what a human decided stays decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkippedBy {
    /// A filter of the config (its name is the task's `skip_rule`).
    Filter,
    /// The analyzer's agent, in its triage.
    Triage,
    /// A human (`executor skip`, the dashboard), whatever decided before.
    Human,
    /// Imported skipped from a v1 export, whose skips name neither a rule nor who made them.
    Imported,
}

super::named_enum!(SkippedBy, "skipped by", {
    Filter => "filter",
    Triage => "triage",
    Human => "human",
    Imported => "imported",
});

impl QueueStatus {
    /// The statuses this one may move to. This table is the queue's state machine.
    pub fn next(self) -> &'static [QueueStatus] {
        use QueueStatus::*;
        match self {
            Pending => &[ForReview, AwaitingGo, Skip],
            ForReview => &[AwaitingGo, Approved, Skip],
            AwaitingGo => &[Approved, Skip],
            Approved => &[Done],
            Skip => &[Pending],
            // Only `executor queue retry`, once the completed run was abandoned (its PR closed unmerged).
            Done => &[Approved],
        }
    }

    pub fn check(self, to: QueueStatus) -> Result<(), IllegalTransition> {
        if self.next().contains(&to) {
            Ok(())
        } else {
            Err(illegal("task", self, to, self.next().iter().copied()))
        }
    }
}

/// One row of `executor_queue`: a task from a tracker and what triage made of it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Task {
    pub id: i64,
    pub task_gid: TaskGid,
    pub added_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub source: Option<String>,
    pub description: Option<String>,
    pub notes: Option<String>,
    pub status: QueueStatus,
    pub priority: Option<i32>,
    pub complexity: Option<String>,
    pub feasibility: Option<String>,
    pub analysis_summary: Option<String>,
    pub executor_run_id: Option<i64>,
    /// Which repository (a key of `[repos]` in the config) the work happens in.
    pub repo: Option<String>,
    /// Text the tracker sent after the task was approved: kept apart, because agents are only ever told
    /// the text a human approved, until a human accepts this one (`executor approve`). `None` for a
    /// field the revision does not change.
    pub revision_description: Option<String>,
    pub revision_notes: Option<String>,
    /// When the pending revision arrived; `None` when there is none.
    pub revision_at: Option<DateTime<Utc>>,
    /// What the tracker said besides the text, for the skip filters: the task's page, whether it is done
    /// (`None`: the tracker does not say), who it is assigned to, when it last changed there.
    pub url: Option<String>,
    pub completed: Option<bool>,
    pub assignee: Option<String>,
    pub source_modified_at: Option<DateTime<Utc>>,
    /// The tracker's whole object (JSON) for the filters' `raw.*` fields. Not in `--json` listings.
    #[serde(skip)]
    pub raw_json: Option<String>,
    /// The filter (its name in the config) that skipped the task, and its sentence; `None` when no
    /// filter skipped it (the triage or a human did, or it is not skipped).
    pub skip_rule: Option<String>,
    pub skip_why: Option<String>,
    /// Who skipped it last, while it is skipped; `None` when it is not.
    pub skipped_by: Option<SkippedBy>,
    /// What the pull request must meet, from the triage; the `pr_review` prompt checks it.
    pub acceptance_criteria: Vec<String>,
    pub analyzed_at: Option<DateTime<Utc>>,
    /// The last failed analysis of the task as it stands (an agent that could not run, an answer that
    /// was not the schema twice), how many failed, and when the analyzer may try again.
    pub analysis_error: Option<String>,
    pub analysis_attempts: i64,
    pub analysis_retry_at: Option<DateTime<Utc>>,
    /// How many times a human sent the skipped task back for another look (`executor reanalyze`): the
    /// analyzer takes round 0 (new tasks) first.
    pub analysis_round: i64,
    /// The analyzer analyzing it now (`host:pid`), until its claim expires.
    pub claim_owner: Option<String>,
    pub claim_expires_at: Option<DateTime<Utc>>,
}

#[cfg(test)]
impl Task {
    /// A task with nothing but its gid and status, added at the epoch: unit tests set what they need
    /// with `Task { field, ..Task::for_test(gid, status) }`.
    pub(crate) fn for_test(gid: &str, status: QueueStatus) -> Task {
        Task {
            id: 1,
            task_gid: TaskGid::parse(gid).expect("a valid test gid"),
            added_at: DateTime::UNIX_EPOCH,
            updated_at: DateTime::UNIX_EPOCH,
            source: None,
            description: None,
            notes: None,
            status,
            priority: None,
            complexity: None,
            feasibility: None,
            analysis_summary: None,
            executor_run_id: None,
            repo: None,
            revision_description: None,
            revision_notes: None,
            revision_at: None,
            url: None,
            completed: None,
            assignee: None,
            source_modified_at: None,
            raw_json: None,
            skip_rule: None,
            skip_why: None,
            skipped_by: None,
            acceptance_criteria: Vec::new(),
            analyzed_at: None,
            analysis_error: None,
            analysis_attempts: 0,
            analysis_retry_at: None,
            analysis_round: 0,
            claim_owner: None,
            claim_expires_at: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::QueueStatus::{self, *};

    /// The table, written out independently of `next()` so a slip in either shows.
    const LEGAL: &[(QueueStatus, QueueStatus)] = &[
        (Pending, ForReview),
        (Pending, AwaitingGo),
        (Pending, Skip),
        (ForReview, AwaitingGo),
        (ForReview, Approved),
        (ForReview, Skip),
        (AwaitingGo, Approved),
        (AwaitingGo, Skip),
        (Approved, Done),
        (Skip, Pending),
        (Done, Approved),
    ];

    #[test]
    fn every_pair_is_legal_exactly_when_the_table_says_so() {
        for &from in QueueStatus::ALL {
            for &to in QueueStatus::ALL {
                let expected = LEGAL.contains(&(from, to));
                assert_eq!(from.check(to).is_ok(), expected, "{from} -> {to}");
            }
        }
    }

    #[test]
    fn refusal_names_the_allowed_moves() {
        let err = Done.check(Pending).unwrap_err().to_string();
        assert_eq!(err, "task cannot go from done to pending; from done it can go to: approved");
        let err = AwaitingGo.check(Done).unwrap_err().to_string();
        assert!(err.ends_with("it can go to: approved, skip"), "{err}");
    }

    #[test]
    fn names_round_trip() {
        for &s in QueueStatus::ALL {
            assert_eq!(s.as_str().parse::<QueueStatus>().unwrap(), s);
        }
        let err = "approve".parse::<QueueStatus>().unwrap_err().to_string();
        assert!(err.contains("expected one of: pending, for_review"), "{err}");
    }
}
