use std::path::PathBuf;

/// What went wrong preparing or cleaning a worktree. Git failures name the command and carry its
/// stderr (bounded), so the runner can record a reason a human can act on.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("`{command}` failed ({status}): {stderr}")]
    Git { command: String, status: String, stderr: String },
    #[error("could not run `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// The remote's branch has commits this one lacks (someone else pushed to it): git refused a push
    /// that would have dropped them.
    #[error("`{command}` was refused: the remote branch has commits this clone lacks: {stderr}")]
    PushRejected { command: String, stderr: String },
    #[error("`{command}` printed something unexpected: {output}")]
    Unexpected { command: String, output: String },
    #[error("invalid branch name {name:?}: {reason}")]
    InvalidBranch { name: String, reason: &'static str },
    /// The worktree's link to its git directories is not what git (and executor) made: an agent, which
    /// may write the worktree and its git directory, changed it. Nothing is run through it.
    #[error("worktree {path} was tampered with: {what}")]
    Tampered { path: PathBuf, what: String },
    /// A path read back from the database (or anywhere untrusted) does not lie under the directory
    /// executor keeps such paths in, once symbolic links and `..` are resolved.
    #[error("{path} is not under {root}")]
    OutsideRoot { path: PathBuf, root: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
