//! `executor doctor`: checks a setup and says, for each problem, the one thing to do about it. Writes
//! nothing: a missing database is reported, never created.

mod gitlab;
mod gitlab_issues;
mod jira;
mod redaction;
mod scheduled;
mod webhooks;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde::Serialize;

use super::context::load_config;
use super::output::json;
use crate::config::{Config, expand_home};
use crate::instance_lock::{InstanceLock, LockError};
use crate::store::{KNOWN_VERSION, Store, redact_url};

/// How a check came out. A `Fail` makes `doctor` exit 1; a `Warn` is worth knowing but not blocking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Warn,
    Fail,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub outcome: Outcome,
    pub detail: String,
    /// What to do about a warning or failure.
    pub fix: Option<String>,
}

fn pass(name: &str, detail: impl Into<String>) -> Check {
    Check { name: name.into(), outcome: Outcome::Pass, detail: detail.into(), fix: None }
}

fn problem(outcome: Outcome, name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
    Check { name: name.into(), outcome, detail: detail.into(), fix: Some(fix.into()) }
}

/// Whether agents are contained by the kernel (`worker.sandbox`), and what it means when they are not.
fn sandbox_check(config: &Config) -> Check {
    use crate::config::SandboxMode;
    let mode = config.worker.sandbox;
    let (contained, detail) = crate::worker::sandbox::describe(mode);
    let detail = format!("{detail}. {}", crate::worker::sandbox::layers(config));
    match (contained, mode) {
        (true, SandboxMode::Off) => problem(
            Outcome::Warn,
            "sandbox",
            detail,
            "set worker.sandbox = \"auto\" to contain agents where the kernel has Landlock",
        ),
        (true, _) => pass("sandbox", detail),
        (false, SandboxMode::Landlock) => problem(
            Outcome::Fail,
            "sandbox",
            detail,
            "set worker.sandbox = \"off\" (agents uncontained) or run on Linux 5.13+ with Landlock enabled",
        ),
        (false, _) => problem(
            Outcome::Warn,
            "sandbox",
            detail,
            "run executor on Linux 5.13+ with Landlock enabled (lsm=…,landlock), or inside a VM or container",
        ),
    }
}

/// Runs every check, prints them, and fails when a required one did.
pub async fn run(config_flag: Option<&Path>, as_json: bool) -> anyhow::Result<()> {
    let mut checks = Vec::new();
    let config = match load_config(config_flag) {
        Ok(config) => {
            let from = config
                .source
                .as_ref()
                .map_or("defaults (no config file found)".to_string(), |p| p.display().to_string());
            checks.push(pass("config", format!("valid: {from}")));
            Some(config)
        }
        Err(e) => {
            checks.push(problem(Outcome::Fail, "config", format!("{e:#}"), "fix the key named above"));
            None
        }
    };
    checks.push(git_check());
    if let Some(config) = &config {
        checks.push(database_check(config).await);
        checks.extend(repo_checks(config));
        checks.extend(agent_checks(config));
        checks.push(sandbox_check(config));
        checks.extend(token_checks(config));
        checks.push(redaction::redaction_check(config));
        checks.extend(gitlab::gitlab_check(config).await);
        checks.extend(gitlab::complexity_check(config).await);
        checks.extend(jira::jira_checks(config).await);
        checks.extend(gitlab_issues::gitlab_issues_checks(config).await);
        checks.extend(writeback_checks(config).await);
        checks.extend(webhooks::webhook_checks(config).await);
        let crontab = read_crontab();
        checks.push(cron_check(crontab.as_deref()));
        checks.push(scheduled::scheduled_env_check(config, crontab.as_deref()));
        checks.extend(lock_checks(config));
        checks.push(disk_check(&config.worktrees_root()));
    }
    if as_json {
        json(
            &serde_json::json!({ "ok": !checks.iter().any(|c| c.outcome == Outcome::Fail), "checks": checks }),
        )?;
    } else {
        for c in &checks {
            let mark = match c.outcome {
                Outcome::Pass => "✓",
                Outcome::Warn => "!",
                Outcome::Fail => "✗",
            };
            say!("{mark} {:<14} {}", c.name, c.detail);
            if let Some(fix) = &c.fix {
                say!("  {:<14} → {fix}", "");
            }
        }
    }
    let failed = checks.iter().filter(|c| c.outcome == Outcome::Fail).count();
    if failed > 0 {
        anyhow::bail!("{failed} check(s) failed");
    }
    Ok(())
}

/// The program's `--version` first line, or why it could not be run.
fn version_of(program: &str) -> Result<String, String> {
    match Command::new(program).arg("--version").output() {
        Ok(out) if out.status.success() => {
            Ok(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").trim().to_string())
        }
        Ok(out) => Err(format!("`{program} --version` exited with {}", out.status)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!("{program} is not on PATH")),
        Err(e) => Err(format!("cannot run {program}: {e}")),
    }
}

fn git_check() -> Check {
    match version_of("git") {
        Ok(v) => {
            // `git worktree` arrived in 2.5 and `worktree remove` in 2.17: the second is what executor needs.
            let (major, minor) = parse_version(&v);
            if (major, minor) >= (2, 17) {
                pass("git", v)
            } else {
                problem(Outcome::Fail, "git", v, "install git 2.17 or newer (worktree remove)")
            }
        }
        Err(e) => problem(Outcome::Fail, "git", e, "install git"),
    }
}

fn parse_version(text: &str) -> (u32, u32) {
    let digits = text.split_whitespace().find(|w| w.starts_with(|c: char| c.is_ascii_digit())).unwrap_or("");
    let mut parts = digits.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

async fn database_check(config: &Config) -> Check {
    let url = config.database_url();
    let shown = redact_url(&url);
    if let Some(path) = url.strip_prefix("sqlite://") {
        if !Path::new(path).exists() {
            return problem(
                Outcome::Fail,
                "database",
                format!("no database at {path}"),
                "run `executor init`",
            );
        }
    } else if let Some(refused) = crate::store::unreachable_postgres(&url).await {
        return problem(
            Outcome::Fail,
            "database",
            format!("{shown}: {refused}"),
            "start PostgreSQL, or fix database.url",
        );
    }
    let opened = tokio::time::timeout(Duration::from_secs(20), Store::open(&url)).await;
    let store = match opened {
        Ok(Ok(store)) => store,
        Ok(Err(e)) => return problem(Outcome::Fail, "database", e.to_string(), "fix database.url"),
        Err(_) => {
            return problem(
                Outcome::Fail,
                "database",
                format!("{shown}: no answer in 20 s"),
                "check the server",
            );
        }
    };
    let version = store.schema_version().await;
    store.close().await;
    match version {
        Ok(v) if v == KNOWN_VERSION => pass("database", format!("{shown}, schema {v}")),
        Ok(v) if v < KNOWN_VERSION => problem(
            Outcome::Warn,
            "database",
            format!("{shown}, schema {v} (this executor knows {KNOWN_VERSION})"),
            "run `executor migrate` (any command also migrates)",
        ),
        Ok(v) => problem(
            Outcome::Fail,
            "database",
            format!("{shown}, schema {v} is newer than this executor's {KNOWN_VERSION}"),
            "upgrade executor",
        ),
        Err(e) => problem(Outcome::Fail, "database", e.to_string(), "run `executor init`"),
    }
}

fn repo_checks(config: &Config) -> Vec<Check> {
    if config.repos.is_empty() {
        return vec![problem(
            Outcome::Warn,
            "repos",
            "no [repos.NAME] in the config: runs cannot start",
            "add a [repos.NAME] table with the path of a local clone",
        )];
    }
    config
        .repos
        .iter()
        .map(|(name, repo)| {
            let label = format!("repo {name}");
            let path = expand_home(&repo.path);
            if !path.is_dir() {
                return problem(
                    Outcome::Fail,
                    &label,
                    format!("{} does not exist", path.display()),
                    format!("fix repos.{name}.path"),
                );
            }
            let base = format!("refs/heads/{}", repo.base);
            let ok = Command::new("git")
                .args(["rev-parse", "--verify", "--quiet", &base])
                .current_dir(&path)
                .output()
                .is_ok_and(|o| o.status.success());
            if ok {
                pass(&label, format!("{} (base {})", path.display(), repo.base))
            } else {
                problem(
                    Outcome::Fail,
                    &label,
                    format!("{} is not a git checkout with a branch {}", path.display(), repo.base),
                    format!("clone the repository there, or fix repos.{name}.base"),
                )
            }
        })
        .collect()
}

fn agent_checks(config: &Config) -> Vec<Check> {
    let w = &config.worker;
    let program = match w.agent.as_str() {
        "claude" => w.claude.program.clone(),
        "codex" => w.codex.program.clone(),
        _ => w.command.argv.first().cloned().unwrap_or_default(),
    };
    let mut out = Vec::new();
    if w.agent == "command" {
        let found = crate::worker::agent::locate_program(&program);
        out.push(match found {
            Some(p) => pass("agent", format!("command {}", p.display())),
            None => problem(
                Outcome::Fail,
                "agent",
                format!("worker.command.argv names {program:?}, which is not an executable file or on PATH"),
                "fix worker.command.argv",
            ),
        });
    } else {
        out.push(match version_of(&program) {
            Ok(v) => pass("agent", format!("{} {v}", w.agent)),
            Err(e) => problem(
                Outcome::Fail,
                "agent",
                e,
                format!("install {} or set worker.{}.program", w.agent, w.agent),
            ),
        });
    }
    // A fallback agent that cannot start costs its run an attempt each time the run turns to it.
    for name in w.agents().iter().skip(1) {
        let label = format!("fallback {name}");
        out.push(match crate::worker::agent_named(config, name).check_program() {
            Ok(path) => pass(&label, path.display().to_string()),
            Err(why) => problem(
                Outcome::Warn,
                &label,
                why,
                format!("install {name}, or remove it from worker.fallback"),
            ),
        });
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if w.agent == "claude" && w.claude.permission_mode == "bypassPermissions" && root {
        let sandbox = std::env::var("IS_SANDBOX").is_ok_and(|v| v == "1");
        out.push(if sandbox {
            pass("claude as root", "IS_SANDBOX=1 is set, so bypassPermissions is allowed")
        } else {
            problem(
                Outcome::Fail,
                "claude as root",
                "Claude Code refuses --permission-mode bypassPermissions as root without IS_SANDBOX=1",
                "export IS_SANDBOX=1 before starting executor (it is in worker.pass_env), or run as another user",
            )
        });
    }
    out
}

/// The tokens the configured forges and sources need (present or not; never shown).
fn token_checks(config: &Config) -> Vec<Check> {
    let mut out = Vec::new();
    let uses_github = config.repos.values().any(|r| r.forge == "github")
        || config.sources.iter().any(|s| s.kind == "github_issues");
    if uses_github {
        let set = config.github.token_env.iter().find(|n| std::env::var(n).is_ok_and(|v| !v.is_empty()));
        out.push(match (set, crate::worker::agent::locate_program("gh"), config.github.app_id) {
            (Some(name), _, _) => pass("github token", format!("from ${name}")),
            (None, _, id) if id != 0 => pass("github token", format!("GitHub App {id}")),
            (None, Some(_), _) => problem(
                Outcome::Warn,
                "github token",
                format!(
                    "none of {} is set; `gh auth token` will be asked",
                    config.github.token_env.join(", ")
                ),
                "run `gh auth login`, or export GH_TOKEN",
            ),
            (None, None, _) => problem(
                Outcome::Fail,
                "github token",
                format!(
                    "none of {} is set, gh is not installed, no GitHub App",
                    config.github.token_env.join(", ")
                ),
                "export GH_TOKEN with a token that has repo scope",
            ),
        });
    }
    let uses_gitlab = config.repos.values().any(|r| r.forge == "gitlab")
        || config.sources.iter().any(|s| s.kind == "gitlab_issues");
    if uses_gitlab {
        let set =
            config.gitlab.token_env.iter().find(|n| std::env::var(n).is_ok_and(|v| !v.trim().is_empty()));
        out.push(match set {
            Some(name) => pass("gitlab token", format!("from ${name}")),
            None => problem(
                Outcome::Fail,
                "gitlab token",
                format!("none of {} is set", config.gitlab.token_env.join(", ")),
                format!(
                    "export {} with a GitLab access token of scope `api` (`read_api` reads issues but cannot \
                     write notes back)",
                    config.gitlab.token_env.first().map_or("GITLAB_TOKEN", String::as_str)
                ),
            ),
        });
    }
    for s in config.sources.iter().filter(|s| s.has_token_env()) {
        let label = format!("source {}", s.name);
        let (what, kind) = match s.kind.as_str() {
            "linear" => ("Linear API key", "a Linear personal API key"),
            "jira" if s.auth == "bearer" => ("Jira token", "a Jira Data Center personal access token"),
            "jira" => ("Jira API token", "an API token of the account in `email` (id.atlassian.com)"),
            _ => ("Asana token", "an Asana personal access token"),
        };
        out.push(if std::env::var(&s.token_env).is_ok_and(|v| !v.trim().is_empty()) {
            pass(&label, format!("{what} in ${}", s.token_env))
        } else {
            problem(
                Outcome::Fail,
                &label,
                format!("${} is not set", s.token_env),
                format!("export {} with {kind}", s.token_env),
            )
        });
    }
    out
}

/// The user's crontab, when `crontab -l` prints one.
fn read_crontab() -> Option<String> {
    let out = Command::new("crontab").arg("-l").output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn cron_check(crontab: Option<&str>) -> Check {
    match crontab {
        Some(text) if text.contains(crate::schedule::BEGIN) => {
            pass("cron", "the executor entries are installed")
        }
        _ => problem(
            Outcome::Warn,
            "cron",
            "no executor entries in the crontab",
            "run `executor cron install` (or `executor service print`)",
        ),
    }
}

/// Who holds the runner's and the analyzer's locks now (taken and let go at once when free).
fn lock_checks(config: &Config) -> Vec<Check> {
    let dir = config.data_dir();
    crate::schedule::JOBS
        .iter()
        .map(|job| {
            // No lock file: never ran here; none is created just to look.
            if !dir.join(format!("{job}.lock")).exists() {
                return pass(job, "not running");
            }
            match InstanceLock::acquire(&dir, job) {
                Ok(_) => pass(job, "not running"),
                Err(LockError::Held { pid, .. }) => pass(job, format!("running (pid {pid})")),
                Err(e) => {
                    problem(Outcome::Warn, job, e.to_string(), "check the data directory's permissions")
                }
            }
        })
        .collect()
}

fn disk_check(root: &Path) -> Check {
    // The worktree root may not exist yet: its nearest existing parent holds the space.
    let mut at = root.to_path_buf();
    while !at.exists() && at.pop() {}
    match nix::sys::statvfs::statvfs(&at) {
        Ok(s) => {
            #[allow(clippy::unnecessary_cast)] // the fields are narrower on macOS
            let free = s.blocks_available() as u64 * s.fragment_size() as u64;
            let gib = free as f64 / (1u64 << 30) as f64;
            if gib < 2.0 {
                problem(
                    Outcome::Warn,
                    "disk",
                    format!("{gib:.1} GiB free under {}", root.display()),
                    "free space: each run's worktree is a checkout of its repository",
                )
            } else {
                pass("disk", format!("{gib:.1} GiB free under {}", root.display()))
            }
        }
        Err(e) => problem(Outcome::Warn, "disk", format!("{}: {e}", at.display()), "check workspace.root"),
    }
}

/// For each source that writes back: whether its tracker would take executor's comments, asked
/// without writing (Asana: the token's user and its membership of each project; GitHub: the
/// repository's issues; Linear: the key's user, its teams and their workflow states; Jira: the token's
/// user, `GET /rest/api/3/myself`). A tracker that would refuse is a warning: write-back never blocks a run.
async fn writeback_checks(config: &Config) -> Vec<Check> {
    let mut out = Vec::new();
    let mut github = None;
    // A GitLab issues source's one read-only question is its own check (`gitlab_issues NAME`).
    let writing =
        |s: &&crate::config::SourceConfig| !s.writeback_events().is_empty() && s.kind != "gitlab_issues";
    for s in config.sources.iter().filter(writing) {
        let label = format!("writeback {}", s.name);
        if s.kind == "github_issues" && github.is_none() {
            github = crate::github::GitHubClient::new(&config.github).ok().map(std::sync::Arc::new);
        }
        let token = std::env::var(&s.token_env).ok();
        let events: Vec<&str> = s.writeback_events().iter().map(|e| e.as_str()).collect();
        let probe =
            tokio::time::timeout(Duration::from_secs(20), crate::writeback::probe(s, token, github.clone()))
                .await
                .unwrap_or_else(|_| {
                    Err(crate::writeback::TrackerError::Passing("no answer within 20 s".into()))
                });
        out.push(match probe {
            Ok(detail) => pass(&label, format!("{} ({})", detail, events.join(", "))),
            Err(crate::writeback::TrackerError::Refused { why, fix }) => {
                problem(Outcome::Warn, &label, why, fix)
            }
            Err(crate::writeback::TrackerError::Passing(why)) => problem(
                Outcome::Warn,
                &label,
                format!("could not ask: {why}"),
                "run `executor doctor` again; messages wait in the outbox meanwhile",
            ),
        });
    }
    out
}
