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

pub use duration::Duration;
pub use find::{ConfigSource, locate, user_config_path};
pub use github_login::GitHubLogin;
pub use gitlab::{GitLab, valid_project_path};
pub use insights::Insights;
pub use intake::SourceConfig;
pub use trust::Trust;

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
pub struct Worker {
    /// `claude`, `codex` or `command`.
    pub agent: String,
    /// The agents a run turns to, in order, when a worker of the one before ends stuck, failed or
    /// without progress (`worker.agent` first); after the last it starts over. Empty: `worker.agent` only.
    pub fallback: Vec<String>,
    pub idle_timeout: Duration,
    pub hard_timeout: Duration,
    pub kill_grace: Duration,
    /// A directory of prompt templates overriding the embedded defaults (same file names).
    pub prompts_dir: String,
    /// Environment variables passed through to agents (besides PATH, HOME, LANG). Their values are
    /// treated as secrets: redacted from every log.
    pub pass_env: Vec<String>,
    /// Turn limits per worker kind (Claude Code's `--max-turns`).
    pub max_turns: MaxTurns,
    /// The most raw output a worker writes: its output file is bounded by the kernel at this size
    /// (`RLIMIT_FSIZE` on the process that writes it, not on the agent), and the worker is stopped
    /// (reason `output_limit`).
    pub max_output_bytes: u64,
    /// More environment variables whose values are secrets (besides `pass_env`, the GitHub token, the
    /// webhook URL and the dashboard token): replaced by `[REDACTED]` in everything executor sends or
    /// writes — prompts, comments, notices, work logs, events.
    pub redact_env: Vec<String>,
    /// How agents are contained by the kernel: `auto` (Landlock where the kernel has it), `landlock`
    /// (refuse to start without it) or `off`.
    pub sandbox: SandboxMode,
    /// More directories (besides the worktree, a private temporary directory and the agent's own state
    /// directories) a sandboxed agent may write. `~/` is the home directory.
    pub sandbox_writable: Vec<String>,
    /// Paths a sandboxed agent may not even read, besides executor's own (its config file, data
    /// directory, database and the other runs' worktrees) and the agent CLIs' real state directories
    /// (each agent gets a private one). `~/` is the home directory.
    pub sandbox_hidden: Vec<String>,
    /// Where a sandboxed agent may connect: `allowlist` (TCP only to its model API's port and the
    /// ports of `network_allow`) or `open`.
    pub network: NetworkMode,
    /// More destinations a sandboxed agent may connect to, as `host:port` or `port`. The kernel
    /// enforces the port only (Landlock): any host on an allowed port is reachable.
    pub network_allow: Vec<String>,
    pub claude: ClaudeAgent,
    pub codex: CodexAgent,
    pub command: CommandAgent,
}

/// `worker.sandbox`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Landlock where the kernel offers it; elsewhere agents run uncontained (`executor doctor` and
    /// the runner's log say so).
    #[default]
    Auto,
    /// Landlock, or refuse to start.
    Landlock,
    /// No kernel containment: each agent only has its own sandbox, if any.
    Off,
}

/// `worker.network`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkMode {
    /// TCP connections only to the agent's model API port and `worker.network_allow`.
    #[default]
    Allowlist,
    /// No network containment.
    Open,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Auto => "auto",
            SandboxMode::Landlock => "landlock",
            SandboxMode::Off => "off",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClaudeAgent {
    pub program: String,
    pub permission_mode: String,
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MaxTurns {
    pub queued: u32,
    pub in_progress: u32,
    pub fix_ci: u32,
    pub fix_comments: u32,
    pub pr_review: u32,
    pub fix_conflicts: u32,
    pub plan: u32,
}

impl Default for MaxTurns {
    fn default() -> Self {
        MaxTurns {
            queued: 200,
            in_progress: 200,
            fix_ci: 100,
            fix_comments: 100,
            pr_review: 60,
            fix_conflicts: 100,
            plan: 60,
        }
    }
}

impl MaxTurns {
    pub fn for_kind(&self, kind: crate::domain::WorkerKind) -> u32 {
        use crate::domain::WorkerKind::*;
        match kind {
            Queued => self.queued,
            InProgress => self.in_progress,
            FixCi => self.fix_ci,
            FixComments => self.fix_comments,
            PrReview => self.pr_review,
            FixConflicts => self.fix_conflicts,
            Plan => self.plan,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodexAgent {
    pub program: String,
    pub sandbox: String,
    pub model: String,
}

impl Worker {
    /// `~/` in an agent's program is the home directory, expanded once here, so that `doctor`, the
    /// runner's pre-check and the spawn all look at the same file (a shell would have expanded it; an
    /// `exec` does not).
    fn expand_programs(&mut self) {
        let expand = |p: &mut String| *p = expand_home(p).to_string_lossy().into_owned();
        expand(&mut self.claude.program);
        expand(&mut self.codex.program);
        self.command.argv.first_mut().into_iter().for_each(expand);
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct CommandAgent {
    /// Program and arguments; the prompt arrives on standard input.
    pub argv: Vec<String>,
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

impl Worker {
    /// The agents a run may use, in the order it turns to them: `worker.agent`, then `worker.fallback`
    /// (each once).
    pub fn agents(&self) -> Vec<String> {
        let mut out = vec![self.agent.clone()];
        for a in &self.fallback {
            if !out.contains(a) {
                out.push(a.clone());
            }
        }
        out
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

/// `[web]`: where `executor serve` listens, the token that guards it, and how many connections it holds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Web {
    /// The address to bind; anything but a loopback address needs `allow_remote = true`.
    pub bind: String,
    pub port: u16,
    /// The dashboard token. Empty: a new random one at each start, printed once in the URL. Set by
    /// hand, at least [`Web::MIN_TOKEN_LEN`] characters of letters, digits, `-`, `_`, `.` and `~`.
    pub token: String,
    /// Allow binding beyond loopback; every request (reads too) then needs the token.
    pub allow_remote: bool,
    /// Host names (besides localhost, 127.0.0.0/8 and [::1]) a request's `Host` may name. Any other
    /// is refused: a page on another site that rebinds its name to this address gets nothing.
    pub allowed_hosts: Vec<String>,
    /// Connections held at once; past it, the one waiting longest for a request is closed.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers.
    pub header_read_timeout: Duration,
    /// How long a connection may stay open with no request in progress.
    pub idle_timeout: Duration,
    /// "Sign in with GitHub", when configured.
    pub github_login: Option<GitHubLogin>,
}

impl Web {
    /// The shortest token accepted from the config: 32 characters of the safe alphabet.
    pub const MIN_TOKEN_LEN: usize = 32;

    /// The least a hand-set token must carry by [`Web::token_bits`]: 32 random hex digits carry about
    /// 110 by that measure; `aaaa…` none, `abab…` 32.
    pub const MIN_TOKEN_BITS: f64 = 96.0;

    /// An estimate of the randomness in `token`: its length times the Shannon entropy of its
    /// characters' frequencies. It cannot see patterns (`abcdefgh…` passes), only repeats and small
    /// alphabets, which is what a token typed by hand shows most.
    pub fn token_bits(token: &str) -> f64 {
        let mut counts = std::collections::HashMap::new();
        for c in token.chars() {
            *counts.entry(c).or_insert(0usize) += 1;
        }
        let len = token.chars().count() as f64;
        let per_char: f64 = counts
            .values()
            .map(|&n| {
                let p = n as f64 / len;
                -p * p.log2()
            })
            .sum();
        per_char * len
    }

    /// Whether `token` is long enough and safe in a URL, a cookie and a header as it is.
    pub fn token_is_safe(token: &str) -> bool {
        token.len() >= Self::MIN_TOKEN_LEN
            && token.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~'))
    }

    /// Whether `name` may be listed in `allowed_hosts`: a DNS name or an IP address, without a port.
    fn host_is_plain(name: &str) -> bool {
        let bracketed = name.strip_prefix('[').and_then(|n| n.strip_suffix(']'));
        match bracketed {
            Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
            None => {
                !name.is_empty()
                    && name.len() <= 253
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'))
            }
        }
    }
}

impl Default for Web {
    fn default() -> Self {
        Web {
            bind: "127.0.0.1".into(),
            port: 8370,
            token: String::new(),
            allow_remote: false,
            allowed_hosts: Vec::new(),
            max_connections: 256,
            header_read_timeout: Duration::secs(10),
            idle_timeout: Duration::secs(60),
            github_login: None,
        }
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

/// Credentials no agent reads (`worker.sandbox_hidden`'s default).
pub const DEFAULT_HIDDEN: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.config/gh",
    "~/.netrc",
    "~/.gnupg",
    "~/.docker",
    "~/.kube",
    "~/.git-credentials",
    "~/.config/gcloud",
    "~/.azure",
];

impl Default for Worker {
    fn default() -> Self {
        Worker {
            agent: "claude".into(),
            fallback: Vec::new(),
            idle_timeout: Duration::secs(30 * 60),
            hard_timeout: Duration::secs(3 * 3600),
            kill_grace: Duration::secs(10),
            prompts_dir: String::new(),
            // No GitHub token: the runner pushes and posts; an agent says what it has to say in its result.
            pass_env: vec!["ANTHROPIC_API_KEY".into(), "OPENAI_API_KEY".into(), "IS_SANDBOX".into()],
            max_turns: MaxTurns::default(),
            max_output_bytes: 256 * 1024 * 1024,
            redact_env: Vec::new(),
            sandbox: SandboxMode::Auto,
            sandbox_writable: Vec::new(),
            sandbox_hidden: DEFAULT_HIDDEN.iter().map(|s| s.to_string()).collect(),
            network: NetworkMode::Allowlist,
            network_allow: Vec::new(),
            claude: ClaudeAgent::default(),
            codex: CodexAgent::default(),
            command: CommandAgent::default(),
        }
    }
}

impl Default for ClaudeAgent {
    fn default() -> Self {
        ClaudeAgent {
            program: "claude".into(),
            permission_mode: "bypassPermissions".into(),
            model: String::new(),
        }
    }
}

impl Default for CodexAgent {
    fn default() -> Self {
        CodexAgent { program: "codex".into(), sandbox: "workspace-write".into(), model: String::new() }
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

    fn validate(&self) -> Result<(), String> {
        let fail = |key: &str, why: &str| Err(format!("key `{key}`: {why}"));
        if self.runner.max_workers == 0 {
            return fail("runner.max_workers", "must be at least 1");
        }
        if !matches!(self.worker.agent.as_str(), "claude" | "codex" | "command") {
            return fail("worker.agent", "must be one of: claude, codex, command");
        }
        if let Some(other) =
            self.worker.fallback.iter().find(|a| !matches!(a.as_str(), "claude" | "codex" | "command"))
        {
            return fail(
                "worker.fallback",
                &format!("{other:?} is not an agent: name claude, codex or command"),
            );
        }
        if self.worker.agents().iter().any(|a| a == "command") && self.worker.command.argv.is_empty() {
            return fail("worker.command.argv", "must name a program when the command agent is used");
        }
        let url = &self.database.url;
        let postgres = url.starts_with("postgres://") || url.starts_with("postgresql://");
        if !(url.is_empty() || postgres || url.starts_with("sqlite://")) {
            return fail(
                "database.url",
                "must be empty (SQLite in the data directory), postgres://… or sqlite://PATH",
            );
        }
        if let Some(cluster) = &self.cluster {
            if !postgres {
                return fail(
                    "cluster",
                    "needs PostgreSQL: SQLite is one host's database. Several hosts share one PostgreSQL \
                     (database.url = \"postgres://…\" in each host's config); with one host, remove [cluster] \
                     and use runner.max_workers",
                );
            }
            if cluster.max_workers == 0 {
                return fail("cluster.max_workers", "must be at least 1");
            }
        }
        if self.runner.host_name.trim() != self.runner.host_name
            || self.runner.host_name.contains(['/', ':'])
            || self.runner.host_name.chars().any(char::is_control)
        {
            return fail(
                "runner.host_name",
                "must not contain '/', ':', control characters or surrounding spaces (it is part of lease owner names)",
            );
        }
        if self.runner.lease_ttl.std() < std::time::Duration::from_secs(1) {
            return fail("runner.lease_ttl", "must be at least 1s");
        }
        for (key, value) in [
            ("budget.per_run_usd", self.budget.per_run_usd),
            ("budget.per_day_usd", self.budget.per_day_usd),
            ("budget.min_launch_usd", self.budget.min_launch_usd),
        ] {
            if !(value >= 0.0 && value.is_finite()) {
                return fail(key, "must be a non-negative number of dollars");
            }
        }
        if let Some((key, why)) = self.web.github_login.as_ref().and_then(GitHubLogin::invalid) {
            return fail(key, why);
        }
        if let Some((key, why)) = self.insights.invalid() {
            return fail(key, why);
        }
        for entry in &self.worker.network_allow {
            if let Err(why) = allowed_port(entry) {
                return fail("worker.network_allow", &why);
            }
        }
        if self.github.batch_size == 0 || self.github.batch_size > 100 {
            return fail("github.batch_size", "must be between 1 and 100 pull requests per request");
        }
        if self.github.app_id != 0
            && (self.github.private_key_path.is_empty() || self.github.installation_id == 0)
        {
            return fail(
                "github.app_id",
                "a GitHub App needs github.private_key_path and github.installation_id too",
            );
        }
        if !self.web.token.is_empty() && !Web::token_is_safe(&self.web.token) {
            return fail(
                "web.token",
                "must be at least 32 characters of letters, digits, '-', '_', '.' and '~' (or empty: a new \
                 random one at each start)",
            );
        }
        if !self.web.token.is_empty() && Web::token_bits(&self.web.token) < Web::MIN_TOKEN_BITS {
            return fail(
                "web.token",
                &format!(
                    "is not random enough ({:.0} bits by its characters' counts, at least {:.0} needed: \
                     a repeated or typed value is guessed by trying); use `openssl rand -hex 32` (or leave \
                     it empty: a new random one at each start)",
                    Web::token_bits(&self.web.token),
                    Web::MIN_TOKEN_BITS
                ),
            );
        }
        if let Some(bad) = self.web.allowed_hosts.iter().find(|h| !Web::host_is_plain(h)) {
            return fail(
                "web.allowed_hosts",
                &format!("{bad:?} is not a host name or IP address (no port, no scheme; IPv6 as [::1])"),
            );
        }
        if self.web.max_connections < 8 {
            return fail("web.max_connections", "must be at least 8 (a browser opens several at once)");
        }
        for (key, value) in [
            ("web.header_read_timeout", self.web.header_read_timeout),
            ("web.idle_timeout", self.web.idle_timeout),
        ] {
            if value.std() < std::time::Duration::from_secs(1) {
                return fail(key, "must be at least 1s");
            }
        }
        if self.analyzer.concurrency == 0 || self.analyzer.concurrency > 64 {
            return fail("analyzer.concurrency", "must be between 1 and 64 tasks at once");
        }
        if self.analyzer.max_attempts == 0 {
            return fail("analyzer.max_attempts", "must be at least 1");
        }
        intake::validate_sources(self)?;
        if let Err(e) = self.compiled_filters() {
            return Err(format!("[[filters]]: {e}"));
        }
        if self.worker.max_output_bytes == 0 {
            return fail("worker.max_output_bytes", "must be at least 1");
        }
        for (model, p) in &self.pricing.0 {
            if ![p.input, p.output, p.cache_read, p.cache_write].iter().all(|v| *v >= 0.0 && v.is_finite()) {
                return fail(
                    &format!("pricing.{model}"),
                    "prices must be non-negative dollars per million tokens",
                );
            }
        }
        for (name, repo) in &self.repos {
            if !matches!(repo.forge.as_str(), "local" | "github" | "gitlab") {
                return fail(&format!("repos.{name}.forge"), "must be \"local\", \"github\" or \"gitlab\"");
            }
            if repo.path.is_empty() {
                return fail(&format!("repos.{name}.path"), "must name the local clone");
            }
            if repo.forge == "github" && repo.github_slug().is_none() {
                return fail(
                    &format!("repos.{name}.github"),
                    "must be the repository as \"owner/name\" when forge = \"github\"",
                );
            }
            if repo.forge == "gitlab" && !valid_project_path(&repo.gitlab) {
                return fail(
                    &format!("repos.{name}.gitlab"),
                    "must be the project's full path, e.g. \"group/project\", when forge = \"gitlab\"",
                );
            }
            if repo.remote.is_empty()
                || repo.remote.starts_with('-')
                || repo.remote.contains(char::is_whitespace)
            {
                return fail(&format!("repos.{name}.remote"), "must name a git remote, e.g. \"origin\"");
            }
            let trigger = repo.ci_trigger.as_str();
            if repo.forge == "gitlab" {
                if !matches!(trigger, "" | "pipeline" | "retry") {
                    return fail(
                        &format!("repos.{name}.ci_trigger"),
                        "must be \"\" (a pipeline starts on push), \"pipeline\" (create one for the branch) \
                         or \"retry\" (retry the head pipeline's failed jobs) when forge = \"gitlab\"",
                    );
                }
                continue;
            }
            let file_ok = |f: &str| {
                !f.is_empty() && f.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            };
            let workflow_ok = trigger.strip_prefix("workflow:").is_some_and(file_ok);
            let rerun_ok = trigger == "rerun" || trigger.strip_prefix("rerun:").is_some_and(file_ok);
            if !(trigger.is_empty() || rerun_ok || workflow_ok) {
                return fail(
                    &format!("repos.{name}.ci_trigger"),
                    "must be \"\" (CI starts on push), \"workflow:FILE.yml\", \"rerun\" or \"rerun:FILE.yml\"",
                );
            }
        }
        Ok(())
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
