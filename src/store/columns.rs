//! The columns each table's rows are read with, for `SELECT` statements.
//!
//! Never `SELECT *`: a prepared statement (sqlx caches them per connection) is tied to the table's width
//! when it was prepared, and a migration that adds a column — another process upgrading the database
//! while a runner works, or this process migrating a database its pool already read — would hand the
//! cached statement rows wider than it expects, which the SQLite driver cannot read. Named columns keep
//! every statement's shape fixed. Macros, so that the SQL stays a literal (`concat!`).

macro_rules! run_columns {
    () => {
        "id, task_gid, repo, worktree_path, branch_name, pr_url, pr_number, thread_id, started_at, updated_at, completed_at, state, ci_attempts, worker_session_id, worker_last_update, worker_pid, worker_stuck_count, head_sha, review_verdict, review_sha, lease_owner, lease_expires_at, cost_usd, input_tokens, output_tokens, last_decision, last_decision_at, ci_triggered_sha, last_snapshot, budget_base_usd, budget_stopped, cost_estimated, head_seen_at, pushed_at"
    };
}
pub(crate) use run_columns;

macro_rules! session_columns {
    () => {
        "id, run_id, kind, agent, host, pid, pid_start_time, output_path, output_offset, log_path, session_id, started_at, last_output_at, ended_at, end_reason, exit_code, num_turns, cost_usd, input_tokens, output_tokens, result_json, result_error, start_sha, resumed_session, verdict, cost_estimated, review_posted_at, runner_id"
    };
}
pub(crate) use session_columns;

macro_rules! notice_columns {
    () => {
        "id, run_id, task_gid, kind, notice_key, message, created_at, delivered_at, delivery, attempts, last_error"
    };
}
pub(crate) use notice_columns;

macro_rules! local_pr_columns {
    () => {
        "id, run_id, repo, branch, base, state, draft, labels, created_at, updated_at"
    };
}
pub(crate) use local_pr_columns;

macro_rules! local_comment_columns {
    () => {
        "id, pr_id, author, body, path, line, in_reply_to, by_agent, resolved, created_at"
    };
}
pub(crate) use local_comment_columns;

macro_rules! local_ci_columns {
    () => {
        "id, pr_id, sha, name, status, pid, work_dir, output_tail, started_at, finished_at"
    };
}
pub(crate) use local_ci_columns;

macro_rules! event_columns {
    () => {
        "id, at, actor, task_gid, run_id, kind, from_state, to_state, reason, actor_id"
    };
}
pub(crate) use event_columns;

macro_rules! task_columns {
    () => {
        "id, task_gid, added_at, updated_at, source, description, notes, status, priority, complexity, feasibility, analysis_summary, executor_run_id, repo, revision_description, revision_notes, revision_at, url, completed, assignee, source_modified_at, raw_json, skip_rule, skip_why, skipped_by, acceptance_criteria, analyzed_at, analysis_error, analysis_attempts, analysis_retry_at, analysis_round, claim_owner, claim_expires_at"
    };
}
pub(crate) use task_columns;
