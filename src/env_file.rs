//! The environment of scheduled runs. Cron, systemd and launchd start executor with almost nothing
//! (cron: `PATH=/usr/bin:/bin`, `HOME`, `SHELL`): no agent key, no `IS_SANDBOX`, no tracker token. So
//! the variables scheduled runs need live in a file executor owns (`paths.env_file`, mode 0600, outside
//! any repository and hidden from agents), which the scheduled command line names with `--env-file`
//! and executor loads itself, before anything else runs: one parser, no shell.
//!
//! The format is the common subset of systemd's `EnvironmentFile=` and a shell's `.`: `NAME=value`
//! lines, `#` comments, an optional `export `, a value optionally in single or double quotes (taken
//! as written: no escapes, no `$` expansion).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::config::Config;

#[derive(Debug, thiserror::Error)]
pub enum EnvFileError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error(
        "{path} can be read or written by other users (mode {mode:03o}) and holds secrets: run `chmod 600 {path}`"
    )]
    Open { path: PathBuf, mode: u32 },
    #[error(
        "{path} belongs to user {owner}, not to this user ({me}): executor loads only its own user's file"
    )]
    Owner { path: PathBuf, owner: u32, me: u32 },
    /// The line's text is never shown: it may hold a secret.
    #[error("{path}:{line}: {why} (expected NAME=value)")]
    Syntax { path: PathBuf, line: usize, why: &'static str },
}

/// The variables of `text`, in order; a later line for a name wins. Errors give the line number and
/// what is wrong, never the line.
pub fn parse(text: &str) -> Result<Vec<(String, String)>, (usize, &'static str)> {
    let mut vars: Vec<(String, String)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let Some((name, value)) = line.split_once('=') else {
            return Err((i + 1, "no `=`"));
        };
        let name = name.trim();
        if !valid_name(name) {
            return Err((i + 1, "a name is letters, digits and `_`, not starting with a digit"));
        }
        let value = unquote(value.trim()).ok_or((i + 1, "a quote is not closed"))?;
        vars.retain(|(n, _)| n != name);
        vars.push((name.to_string(), value.to_string()));
    }
    Ok(vars)
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

fn unquote(value: &str) -> Option<&str> {
    for quote in ['\'', '"'] {
        if let Some(rest) = value.strip_prefix(quote) {
            return rest.strip_suffix(quote);
        }
    }
    Some(value)
}

/// `NAME=value` as [`parse`] reads it back, or `None` for a value no line can hold (a line break, or
/// both kinds of quote).
pub fn line(name: &str, value: &str) -> Option<String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:@%+,=".contains(c);
    if value.contains(['\n', '\r']) || !valid_name(name) {
        return None;
    }
    if value.chars().all(plain) {
        return Some(format!("{name}={value}"));
    }
    ['\'', '"'].into_iter().find(|q| !value.contains(*q)).map(|q| format!("{name}={q}{value}{q}"))
}

/// The file's variables, once it is known to be this user's own and private. Missing: `Ok(None)`.
pub fn read(path: &Path) -> Result<Option<Vec<(String, String)>>, EnvFileError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(EnvFileError::Read { path: path.into(), source }),
    };
    check_private(path)?;
    parse(&text).map(Some).map_err(|(line, why)| EnvFileError::Syntax { path: path.into(), line, why })
}

#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), EnvFileError> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path).map_err(|source| EnvFileError::Read { path: path.into(), source })?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(EnvFileError::Owner { path: path.into(), owner: meta.uid(), me });
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(EnvFileError::Open { path: path.into(), mode });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_: &Path) -> Result<(), EnvFileError> {
    Ok(())
}

/// Sets the file's variables in this process's environment (over inherited ones: the file is what a
/// scheduled run is meant to see). A missing file is an error here: a command line that names one
/// expects it.
///
/// # Safety
/// No other thread may be running: the environment is not synchronized (call it first in `main`).
pub unsafe fn load(path: &Path) -> Result<usize, EnvFileError> {
    let vars = read(path)?.ok_or_else(|| EnvFileError::Read {
        path: path.into(),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such file (`executor cron install` writes it)",
        ),
    })?;
    for (name, value) in &vars {
        // SAFETY: the caller guarantees this thread is the only one.
        unsafe { std::env::set_var(name, value) };
    }
    let mut loaded = LOADED.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    loaded.extend(vars.iter().map(|(name, _)| name.clone()));
    Ok(vars.len())
}

/// The names [`load`] set: the file holds what scheduled runs must not be without, so each value is
/// redacted like a configured secret (see [`crate::redact::config_secrets`]).
static LOADED: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

/// Names whose values are settings, not secrets, even when the environment file sets them.
const NOT_SECRET: &[&str] =
    &["PATH", "HOME", "LANG", "LC_ALL", "TZ", "SHELL", "USER", "LOGNAME", "IS_SANDBOX"];

/// The names loaded from the environment file whose values are secrets.
pub fn loaded_secret_names() -> Vec<String> {
    let loaded = LOADED.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    loaded.iter().filter(|n| !NOT_SECRET.contains(&n.as_str()) && !n.starts_with("LC_")).cloned().collect()
}

/// Appends `vars` to the file, creating it with mode 0600 (never wider, whatever the umask).
pub fn append(path: &Path, vars: &[(String, String)]) -> Result<(), EnvFileError> {
    let write_err = |source| EnvFileError::Write { path: path.into(), source };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(write_err)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(write_err)?;
    check_private(path)?;
    let mut text = String::new();
    for (name, value) in vars {
        if let Some(line) = line(name, value) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    file.write_all(text.as_bytes()).map_err(write_err)
}

/// The variables a scheduled run of `config` reads from its environment, each with why: the agents'
/// (`worker.pass_env`), the secrets to redact (`worker.redact_env`), the trackers' tokens and, when
/// GitHub is used, its token variables (any one of them does).
pub fn needed(config: &Config) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = Vec::new();
    let mut add = |name: &String, why| {
        if !name.trim().is_empty() && !out.iter().any(|(n, _)| n == name) {
            out.push((name.clone(), why));
        }
    };
    config.worker.pass_env.iter().for_each(|n| add(n, "worker.pass_env"));
    let trackers = config.sources.iter().filter(|s| s.has_token_env());
    trackers.for_each(|s| add(&s.token_env, "a source's token_env"));
    let uses_github = config.repos.values().any(|r| r.forge == "github")
        || config.sources.iter().any(|s| s.kind == "github_issues");
    if uses_github {
        config.github.token_env.iter().for_each(|n| add(n, GITHUB_TOKEN));
    }
    let uses_gitlab = config.repos.values().any(|r| r.forge == "gitlab")
        || config.sources.iter().any(|s| s.kind == "gitlab_issues");
    if uses_gitlab {
        config.gitlab.token_env.iter().for_each(|n| add(n, GITLAB_TOKEN));
    }
    config.worker.redact_env.iter().for_each(|n| add(n, "worker.redact_env"));
    out
}

/// Of the [`needed`] variables, those `shell` has (not empty) and `file` lacks, with the shell's
/// value: what a scheduled run would lack that a run from this shell has.
pub fn missing_from(
    config: &Config,
    file: &[(String, String)],
    shell: impl Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let in_file = |name: &str| file.iter().any(|(n, v)| n == name && !v.is_empty());
    // Any one of GitHub's token variables will do: the file holding one lacks none of them.
    let github_token_in_file = config.github.token_env.iter().any(|n| in_file(n));
    let gitlab_token_in_file = config.gitlab.token_env.iter().any(|n| in_file(n));
    needed(config)
        .into_iter()
        .filter(|(name, why)| {
            let covered = match *why {
                GITHUB_TOKEN => github_token_in_file,
                GITLAB_TOKEN => gitlab_token_in_file,
                _ => in_file(name),
            };
            !covered
        })
        .filter_map(|(name, _)| shell(&name).filter(|v| !v.is_empty()).map(|v| (name, v)))
        .collect()
}

/// Why [`needed`] lists GitHub's token variables.
const GITHUB_TOKEN: &str = "github.token_env";
/// Why [`needed`] lists GitLab's token variables (any one of them will do too).
const GITLAB_TOKEN: &str = "gitlab.token_env";

/// This process's value of `name`, for [`missing_from`].
pub fn from_process(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests;
