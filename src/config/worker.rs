//! `[worker]`: which agent a run uses (and falls back to), each agent's program and settings, its
//! limits, and the sandbox it runs in.

use serde::Deserialize;

use super::{Duration, expand_home};

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
    pub(super) fn expand_programs(&mut self) {
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
