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
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
