//! `executor.toml`: typed, validated, every key with a default. An error names the file, the line and the
//! key, and what is allowed there.

mod duration;
mod find;
mod github_login;
mod gitlab;
mod insights;
mod intake;
mod jira;
mod prices;
pub mod reference;
mod trust;
mod validate;
mod web;
mod worker;

pub use duration::Duration;
pub use find::{ConfigSource, locate, user_config_path};
pub use github_login::GitHubLogin;
pub use gitlab::{GitLab, valid_project_path};
pub use insights::Insights;
pub use intake::SourceConfig;
pub use trust::Trust;
pub use web::Web;
pub use worker::{
    ClaudeAgent, CodexAgent, CommandAgent, DEFAULT_HIDDEN, MaxTurns, NetworkMode, SandboxMode, Worker,
};

use crate::filter::{FilterConfig, Filters, IntakeRules};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The commented file `executor init` writes. Every key, with its default and what it does.
pub const TEMPLATE: &str = include_str!("template.toml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid config {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub database: Database,
    pub paths: Paths,
    pub runner: Runner,
    pub worker: Worker,
    pub analyzer: Analyzer,
    pub budget: Budget,
    pub workspace: Workspace,
    pub notify: Notify,
    /// The GitHub API, for repositories with `forge = "github"`.
    pub github: GitHub,
    /// The GitLab API, for repositories with `forge = "gitlab"`.
    pub gitlab: GitLab,
    /// The dashboard (`executor serve`).
    pub web: Web,
    /// What the insights count as a revert and as an expensive failure.
    pub insights: Insights,
    /// Several hosts sharing one PostgreSQL: limits across all of them. Absent: no such limit.
    pub cluster: Option<Cluster>,
    /// Dollars per million tokens by model name (the longest key that starts the model's name wins;
    /// `default` for the rest): executor's estimate of a worker's cost while the agent has not said it
    /// (Claude Code says it only at the end; Codex never).
    pub pricing: Pricing,
    /// Where tasks come from (`executor intake`).
    pub sources: Vec<SourceConfig>,
    /// What the filters depend on: the configured user, the qualifying sources.
    pub intake: IntakeRules,
    /// Named skip rules, evaluated before any model call (see `executor filters --help`).
    pub filters: Vec<FilterConfig>,
    /// Repositories the work happens in, by name. A task's `repo` names one; with a single repo it is the
    /// default.
    pub repos: BTreeMap<String, Repo>,
    /// Where this config came from (not a key).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// `[cluster]`: what holds across every host sharing the database.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// Live agent processes on all hosts together.
    pub max_workers: u32,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Database {
    /// Empty: SQLite at `<data_dir>/executor.db`. `postgres://…` for PostgreSQL, `sqlite://PATH` otherwise.
    pub url: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Paths {
    /// Empty: the user's data directory (`~/.local/share/executor`, `~/Library/Application Support/executor`).
    pub data_dir: String,
    /// The environment of scheduled runs (cron, systemd, launchd): `NAME=value` lines, mode 0600, which
    /// `executor cron install` writes and its entries load with `--env-file`. Empty:
    /// `<data_dir>/scheduled.env`.
    pub env_file: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Runner {
    /// Live agent processes on this host (over all its runners), counted in the database.
    pub max_workers: u32,
    /// The name this host goes by in the database (worker sessions, leases, `executor status`).
    /// Empty: the machine's hostname.
    pub host_name: String,
    pub loop_interval: Duration,
    pub max_stuck: u32,
    pub max_ci_attempts: u32,
    pub retry_backoff: Duration,
    pub lease_ttl: Duration,
    /// A check that has not reported (or CI that has not started) this long after a head appeared is
    /// told to the human once; the run keeps waiting.
    pub check_timeout: Duration,
    /// After this many failed reviews whose findings `fix_comments` worked on, the human is told instead.
    pub max_review_rounds: u32,
    /// `fix_conflicts` attempts (a pull request conflicting with its base) before a run is abandoned.
    pub max_conflict_attempts: u32,
    /// A worker's question unanswered this long is told to the human once more; then the run waits,
    /// without reminding again.
    pub question_reminder: Duration,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Analyzer {
    pub idle_timeout: Duration,
    pub hard_timeout: Duration,
    /// Tasks analyzed at once.
    pub concurrency: u32,
    /// Failed analyses of a task (no usable answer after its retry) before the analyzer leaves it to a
    /// human.
    pub max_attempts: u32,
    /// The wait after a failed analysis before the task is tried again.
    pub retry_backoff: Duration,
    /// Claude Code's `--permission-mode` for triage: read-only.
    pub permission_mode: String,
    /// Codex's `--sandbox` for triage: read-only.
    pub codex_sandbox: String,
    /// Turn limit of one analysis (Claude Code's `--max-turns`).
    pub max_turns: u32,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Budget {
    pub per_run_usd: f64,
    pub per_day_usd: f64,
    /// The smallest remainder a worker is started with: less is a budget stop, since an agent given
    /// less spends it on its first message and does nothing.
    pub min_launch_usd: f64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Workspace {
    /// Empty: `<data_dir>/worktrees`.
    pub root: String,
    pub branch_prefix: String,
}

/// Dollars per million tokens of one model.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: f64,
    #[serde(default)]
    pub cache_write: f64,
}

/// The price key every table has: what a model not listed costs.
pub const DEFAULT_PRICE: &str = "default";

const BUILT_IN_DEFAULT_PRICE: Price = Price { input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 };

/// The `[pricing]` table: model name prefix → price.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct Pricing(pub BTreeMap<String, Price>);

impl Default for Pricing {
    fn default() -> Self {
        Pricing(BTreeMap::from([(DEFAULT_PRICE.to_string(), BUILT_IN_DEFAULT_PRICE)]))
    }
}

impl Pricing {
    /// The price of `model`: the longest key of this table its name starts with, else the published
    /// price of its model (`prices.rs`), else `default` (built in when the table has none). A table's
    /// `default` comes after the published prices: `init` writes one into every config.
    pub fn price_for(&self, model: &str) -> Price {
        let listed = self
            .0
            .iter()
            .filter(|(k, _)| k.as_str() != DEFAULT_PRICE && model.starts_with(k.as_str()))
            .max_by_key(|(k, _)| k.len())
            .map(|(_, p)| *p);
        listed
            .or_else(|| prices::built_in(model))
            .or_else(|| self.0.get(DEFAULT_PRICE).copied())
            .unwrap_or(BUILT_IN_DEFAULT_PRICE)
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Notify {
    /// Who is @mentioned when a run completes or needs a human, e.g. `@alex`.
    pub mention: String,
    /// A Slack-compatible incoming webhook; empty for none.
    pub webhook_url: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repo {
    /// The local clone the worktrees are made from.
    pub path: String,
    /// `local` (no accounts needed), `github` or `gitlab`.
    #[serde(default = "default_forge")]
    pub forge: String,
    #[serde(default = "default_base")]
    pub base: String,
    /// Local forge: the CI command run at a pull request's head (program and arguments).
    #[serde(default)]
    pub ci_command: Vec<String>,
    /// Local forge: variables CI gets from executor's environment besides PATH, HOME and the locale
    /// (CI runs agent-written code: it gets nothing else, no token or key).
    #[serde(default)]
    pub ci_env: Vec<String>,
    #[serde(default)]
    pub required_checks: Vec<String>,
    #[serde(default)]
    pub required_labels: Vec<String>,
    /// Only comments by these authors can make a worker act.
    #[serde(default)]
    pub trusted_authors: Vec<String>,
    /// GitHub: comments whose author has one of these associations with the repository (`OWNER`,
    /// `MEMBER`, `COLLABORATOR`, …) are trusted too.
    #[serde(default)]
    pub trust_associations: Vec<String>,
    /// GitHub: the repository as `owner/name`.
    #[serde(default)]
    pub github: String,
    /// GitLab: the project's full path, `group/project` or `group/subgroup/project`.
    #[serde(default)]
    pub gitlab: String,
    /// GitHub, GitLab: the git remote branches are pushed to.
    #[serde(default = "default_remote")]
    pub remote: String,
    /// GitHub: how CI is started when a head has no checks after `github.check_grace`: `""` (it starts on
    /// push; nothing to do), `workflow:FILE` (workflow_dispatch at the branch), `rerun` (re-run the
    /// failed jobs of the head's last workflow run; with none at the head, wait) or `rerun:FILE` (the
    /// same, dispatching FILE when the head has no workflow run).
    #[serde(default)]
    pub ci_trigger: String,
    /// Files or globs (relative to the repository) holding the repository's own review rules; the
    /// pr_review worker gets them, fenced as data.
    #[serde(default)]
    pub review_rules: Vec<String>,
    /// Acceptance criteria every pull request of this repository must meet (the review checks them).
    #[serde(default)]
    pub acceptance_criteria: Vec<String>,
    /// Mark a completed run's draft pull request ready for review. Off by default: the human decides.
    #[serde(default)]
    pub mark_ready: bool,
    /// `required`: a `plan` worker writes a plan (read-only) that a human approves before any code;
    /// `off` (the default): work starts at once. A task's own setting (`executor plan set`) wins.
    #[serde(default)]
    pub plan: crate::domain::PlanMode,
}

impl Repo {
    /// A repository on the local forge at `path`, every other key at its default.
    pub fn at(path: &str) -> Repo {
        Repo {
            path: path.into(),
            forge: default_forge(),
            base: default_base(),
            ci_command: Vec::new(),
            ci_env: Vec::new(),
            required_checks: Vec::new(),
            required_labels: Vec::new(),
            trusted_authors: Vec::new(),
            trust_associations: Vec::new(),
            github: String::new(),
            gitlab: String::new(),
            remote: default_remote(),
            ci_trigger: String::new(),
            review_rules: Vec::new(),
            acceptance_criteria: Vec::new(),
            mark_ready: false,
            plan: crate::domain::PlanMode::Off,
        }
    }

    /// How this repository's forge names a run's change ("pull request #12", "merge request !12").
    pub fn words(&self) -> crate::domain::ChangeWords {
        crate::domain::ChangeWords::of_forge(&self.forge)
    }

    /// Whose comments on this repository's pull requests make a worker act.
    pub fn trust(&self) -> Trust {
        Trust { authors: self.trusted_authors.clone(), associations: self.trust_associations.clone() }
    }

    /// `owner` and `name` of `repos.NAME.github`, when it is set and well-formed.
    pub fn github_slug(&self) -> Option<(&str, &str)> {
        let (owner, name) = self.github.split_once('/')?;
        let ok = |s: &str| {
            !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        (ok(owner) && ok(name) && name != "." && name != "..").then_some((owner, name))
    }
}

/// `[github]`: where the GitHub API is, how executor authenticates, and how much of the rate limit it
/// may use.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GitHub {
    /// The REST base: `https://api.github.com`, or `https://HOST/api/v3` for GitHub Enterprise Server.
    pub api_url: String,
    /// Empty: derived from `api_url` (see [`GitHub::graphql_endpoint`]).
    pub graphql_url: String,
    /// Environment variables that may hold a token; the first one set wins. With none set, `gh auth
    /// token`; without `gh`, the GitHub App below.
    pub token_env: Vec<String>,
    /// A GitHub App (with `private_key_path` and `installation_id`); 0 for none.
    pub app_id: u64,
    pub private_key_path: String,
    pub installation_id: u64,
    /// Pull requests per GraphQL request.
    pub batch_size: u32,
    /// GraphQL points executor leaves for the agents' own `gh` use: below this it waits for the reset.
    pub reserve_points: u32,
    /// GitHub registers checks a few seconds after a push: a head with no check is given this long
    /// before CI is triggered.
    pub check_grace: Duration,
    /// How long one HTTP request may take.
    pub request_timeout: Duration,
    /// The environment variable holding the secret GitHub signs webhook deliveries with
    /// (`POST /webhooks/github` on `executor serve`). Unset or empty: deliveries are refused.
    pub webhook_secret_env: String,
}

impl Default for GitHub {
    fn default() -> Self {
        GitHub {
            api_url: "https://api.github.com".into(),
            graphql_url: String::new(),
            token_env: vec!["GH_TOKEN".into(), "GITHUB_TOKEN".into()],
            app_id: 0,
            private_key_path: String::new(),
            installation_id: 0,
            batch_size: 25,
            reserve_points: 1000,
            check_grace: Duration::secs(60),
            request_timeout: Duration::secs(30),
            webhook_secret_env: "EXECUTOR_GITHUB_WEBHOOK_SECRET".into(),
        }
    }
}

impl GitHub {
    /// The GraphQL endpoint: the configured one, else `api_url + /graphql` (github.com), or
    /// `https://HOST/api/graphql` for an Enterprise `https://HOST/api/v3`.
    pub fn graphql_endpoint(&self) -> String {
        if !self.graphql_url.is_empty() {
            return self.graphql_url.clone();
        }
        let api = self.api_url.trim_end_matches('/');
        match api.strip_suffix("/api/v3") {
            Some(host) => format!("{host}/api/graphql"),
            None => format!("{api}/graphql"),
        }
    }
}

fn default_forge() -> String {
    "local".into()
}
fn default_base() -> String {
    "main".into()
}
fn default_remote() -> String {
    "origin".into()
}

impl Default for Runner {
    fn default() -> Self {
        Runner {
            max_workers: 2,
            host_name: String::new(),
            loop_interval: Duration::secs(60),
            max_stuck: 3,
            max_ci_attempts: 3,
            retry_backoff: Duration::secs(5 * 60),
            lease_ttl: Duration::secs(10 * 60),
            check_timeout: Duration::secs(2 * 3600),
            max_review_rounds: 2,
            max_conflict_attempts: 3,
            question_reminder: Duration::secs(24 * 3600),
        }
    }
}

impl Default for Analyzer {
    fn default() -> Self {
        Analyzer {
            idle_timeout: Duration::secs(5 * 60),
            hard_timeout: Duration::secs(15 * 60),
            concurrency: 1,
            max_attempts: 3,
            retry_backoff: Duration::secs(3600),
            permission_mode: "plan".into(),
            codex_sandbox: "read-only".into(),
            max_turns: 40,
        }
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget { per_run_usd: 10.0, per_day_usd: 50.0, min_launch_usd: 0.05 }
    }
}

impl Default for Workspace {
    fn default() -> Self {
        Workspace { root: String::new(), branch_prefix: "executor/".into() }
    }
}

/// A task or run names a repository the config does not have, or names none among several.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RepoNotFound(String);

impl Config {
    /// The words for a change of `repo` (a run's or a task's repository, as `repo_for` reads it):
    /// "pull request" unless that repository is on GitLab. A repository no longer configured keeps
    /// "pull request", as every page did before it could tell.
    pub fn words_for(&self, repo: Option<&str>) -> crate::domain::ChangeWords {
        self.repo_for(repo, "").map(|(_, r)| r.words()).unwrap_or_default()
    }

    /// The words for text about every repository's changes at once (a page's heading, a search hint):
    /// GitLab's when every configured repository is on GitLab, else "pull request".
    pub fn words_everywhere(&self) -> crate::domain::ChangeWords {
        let all_gitlab = !self.repos.is_empty() && self.repos.values().all(|r| r.forge == "gitlab");
        if all_gitlab {
            crate::domain::ChangeWords::MERGE_REQUEST
        } else {
            crate::domain::ChangeWords::PULL_REQUEST
        }
    }

    /// The repository named `repo` (a task's or run's), or the only one configured when it names none.
    /// `who` says whose repo it is, for the error ("run 3", "task 1207").
    pub fn repo_for(&self, repo: Option<&str>, who: &str) -> Result<(&str, &Repo), RepoNotFound> {
        let repos = &self.repos;
        match repo {
            Some(name) => repos.get_key_value(name).map(|(k, v)| (k.as_str(), v)).ok_or_else(|| {
                RepoNotFound(format!("{who} names repo {name:?}, which is not under [repos] in the config"))
            }),
            None => match repos.iter().next() {
                Some((k, v)) if repos.len() == 1 => Ok((k.as_str(), v)),
                _ => Err(RepoNotFound(format!(
                    "{who} names no repo and the config has {} repos: give the task --repo, or configure exactly one [repos.NAME]",
                    repos.len()
                ))),
            },
        }
    }

    /// Reads and validates `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.into(), source })?;
        let mut config =
            Self::parse(&text).map_err(|message| ConfigError::Invalid { path: path.into(), message })?;
        config.source = Some(path.to_path_buf());
        Ok(config)
    }

    /// Parses and validates TOML text; the error names the line and key.
    pub fn parse(text: &str) -> Result<Config, String> {
        let mut config: Config = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())?;
        intake::fill_source_defaults(&mut config.sources);
        config.worker.expand_programs();
        config.validate()?;
        Ok(config)
    }

    /// The data directory: the configured one, or the user's data directory.
    pub fn data_dir(&self) -> PathBuf {
        if !self.paths.data_dir.is_empty() {
            return expand_home(&self.paths.data_dir);
        }
        dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("executor")
    }

    /// The database URL: the configured one, or SQLite in the data directory.
    pub fn database_url(&self) -> String {
        if self.database.url.is_empty() {
            format!("sqlite://{}", self.data_dir().join("executor.db").display())
        } else {
            self.database.url.clone()
        }
    }

    /// The skip filters, compiled (a config that loaded always compiles).
    pub fn compiled_filters(&self) -> Result<Filters, crate::filter::FilterError> {
        Filters::compile(&self.intake, &self.filters)
    }

    /// The environment file of scheduled runs (`paths.env_file`).
    pub fn env_file(&self) -> PathBuf {
        if !self.paths.env_file.is_empty() {
            return expand_home(&self.paths.env_file);
        }
        self.data_dir().join("scheduled.env")
    }

    pub fn logs_dir(&self) -> PathBuf {
        self.data_dir().join("logs")
    }

    /// This host's name in the database: `runner.host_name`, else the machine's hostname.
    pub fn host_name(&self) -> String {
        if !self.runner.host_name.is_empty() {
            return self.runner.host_name.clone();
        }
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into())
    }

    pub fn worktrees_root(&self) -> PathBuf {
        if self.workspace.root.is_empty() {
            self.data_dir().join("worktrees")
        } else {
            expand_home(&self.workspace.root)
        }
    }
}

/// The TCP port of a `worker.network_allow` entry: `host:port`, `[v6]:port` or a bare `port`.
pub fn allowed_port(entry: &str) -> Result<u16, String> {
    let port = entry.trim().rsplit(':').next().unwrap_or_default();
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(format!("{entry:?} is not \"host:port\" or \"port\" (a TCP port from 1 to 65535)")),
    }
}

/// `~/x` → the home directory's `x`; anything else as it is.
pub fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(p),
    }
}

#[cfg(test)]
mod tests;
