//! Running git: an argument array, a fixed locale, no prompts, bounded error text.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::WorkspaceError;

/// How much of git's stderr an error keeps: enough to see the cause, not a flood in the database.
const STDERR_LIMIT: usize = 2000;

/// Runs `git -C dir args…` and returns its stdout, or an error naming the command when it fails.
pub(super) fn git<I, S>(dir: &Path, args: I) -> Result<String, WorkspaceError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let (command, output) = run(dir, args)?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(failure(command, &output))
    }
}

/// Like [`git`], but a non-zero exit is an answer ("no"), not an error: `Ok(None)`.
pub(super) fn git_probe<I, S>(dir: &Path, args: I) -> Result<Option<String>, WorkspaceError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let (_, output) = run(dir, args)?;
    Ok(output.status.success().then(|| String::from_utf8_lossy(&output.stdout).into_owned()))
}

fn run<I, S>(dir: &Path, args: I) -> Result<(String, Output), WorkspaceError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<_> = args.into_iter().collect();
    let command = std::iter::once("git".to_string())
        .chain(args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ");
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(&args)
        // Parseable messages, and never wait for a password on a terminal nobody watches.
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .map_err(|source| WorkspaceError::Spawn { command: command.clone(), source })?;
    Ok((command, output))
}

fn failure(command: String, output: &Output) -> WorkspaceError {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut stderr = stderr.trim().to_string();
    if stderr.len() > STDERR_LIMIT {
        let cut = (0..=STDERR_LIMIT).rev().find(|&i| stderr.is_char_boundary(i)).unwrap_or(0);
        stderr.truncate(cut);
        stderr.push('…');
    }
    WorkspaceError::Git {
        command,
        status: output.status.code().map_or("killed by a signal".into(), |c| format!("exit {c}")),
        stderr,
    }
}
