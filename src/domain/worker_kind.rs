/// The seven kinds of worker, one per prompt (seed: "Worker Prompts"). The runner picks the kind from the
/// run's state and its pull request; the kind picks the prompt and the end state the worker aims for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkerKind {
    /// First work on a run: investigate, implement, open a draft PR.
    Queued,
    /// Resume an interrupted run that has no PR yet.
    InProgress,
    /// CI failed at the PR's head: fix it.
    FixCi,
    /// Trusted reviewers left unresolved comments: address each one.
    FixComments,
    /// CI is green and nothing is unresolved: review the PR and return a verdict.
    PrReview,
    /// The PR conflicts with its base branch: merge the base in, resolve, run the tests.
    FixConflicts,
    /// Before any code, where the repository or task asks for a plan: read the code (read-only) and write
    /// the approach, files, risks and tests for a human to approve.
    Plan,
}

super::named_enum!(WorkerKind, "worker kind", {
    Queued => "queued",
    InProgress => "in_progress",
    FixCi => "fix_ci",
    FixComments => "fix_comments",
    PrReview => "pr_review",
    FixConflicts => "fix_conflicts",
    Plan => "plan",
});
