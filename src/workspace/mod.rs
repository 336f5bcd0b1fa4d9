//! Git worktrees: one per run, on a branch named from the task, created, reused on resume and removed
//! only when nothing would be lost.
//!
//! Architecture invariant: git is run with an argument array (never a shell), and untrusted text (a task
//! description) reaches git only as a slug of `[a-z0-9-]`, after the whole ref name is validated.
//!
//! Architecture invariant: git never runs through a worktree's own `.git` or its `commondir` (both the
//! agent's to write), nor with hooks, fsmonitor or submodules, on a directory an agent or CI wrote: the
//! git directories come from the configured repository and the link is checked first (`link.rs`). A path
//! read back from the database is used only under its root ([`path_under`]).

mod branch;
mod error;
mod git;
mod link;
mod reverts;
mod review_rules;
mod scratch;
mod worktree;

pub use branch::{SLUG_MAX, branch_name, check_branch_name, check_gid_branch, slug};
pub use error::WorkspaceError;
pub use git::{
    git_dirs, git_write_dirs, merge_remote_branch, merge_remote_branch_with, push_branch, push_branch_with,
};
pub use link::path_under;
pub use reverts::{MergedPr, Revert, fetch_base, find_revert};
pub use review_rules::{ReviewRule, review_rules};
pub use scratch::{
    DiffCounts, add_detached, add_detached_holding, base_commit, branch_head, diff_stat, remove_scratch,
};
pub use worktree::{
    HostWorktree, Removal, Worktree, branch_has_commits, current_branch, ensure_worktree, head_sha,
    host_worktrees, prune, remove_if_safe, remove_superseded, take_over_branch,
};
