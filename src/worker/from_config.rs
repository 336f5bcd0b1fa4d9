//! What the configuration says about starting an agent: which agent with which options, its
//! timeouts, and its environment. The runner, the analyzer's triage and `executor worker` all start
//! agents from these, so an agent is configured the same way wherever it runs.

use std::path::Path;

use super::{AgentConfig, ClaudeConfig, CodexConfig, CommandConfig, EnvSpec, PromptKind, Timeouts};
use crate::config::Config;
use crate::domain::TaskGid;

/// The agent's environment: what it needs, what the config names, and how to reach executor. `run_id`
/// is `None` for an agent that works on no run (one run by hand, the analyzer's triage); `kind` becomes
/// `EXECUTOR_WORKER_KIND` (`analyzer` for a triage).
pub fn worker_env(
    config: &Config,
    self_exe: Option<&Path>,
    gid: &TaskGid,
    run_id: Option<i64>,
    kind: PromptKind,
) -> EnvSpec {
    let mut set = Vec::new();
    if let Some(id) = run_id {
        set.push(("EXECUTOR_RUN_ID".to_string(), id.to_string()));
    }
    set.push(("EXECUTOR_TASK_GID".to_string(), gid.to_string()));
    set.push(("EXECUTOR_WORKER_KIND".to_string(), kind.to_string()));
    // The agent CLI's private state (see `agent_state`), one per run so that a resumed session is found.
    let owner = run_id.map_or_else(|| format!("{kind}"), |id| format!("run-{id}"));
    let state = config.data_dir().join("agents").join(gid.as_str()).join(owner);
    let state = std::path::absolute(&state).unwrap_or(state);
    match config.worker.agent.as_str() {
        "claude" => {
            set.push(("CLAUDE_CONFIG_DIR".into(), state.join("claude").display().to_string()));
            // An unattended worker updates no CLI and calls nothing but its model API.
            set.push(("DISABLE_AUTOUPDATER".into(), "1".into()));
            set.push(("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), "1".into()));
        }
        "codex" => set.push(("CODEX_HOME".into(), state.join("codex").display().to_string())),
        _ => {}
    }
    if let Some(cfg) = &config.source
        && let Ok(abs) = std::path::absolute(cfg)
    {
        set.push(("EXECUTOR_CONFIG".into(), abs.display().to_string()));
    }
    // `executor comment` must resolve to this very binary, whatever the agent's PATH holds.
    if let Some(dir) = self_exe.and_then(|e| e.parent()) {
        let path = std::env::var("PATH").unwrap_or_default();
        set.push(("PATH".into(), format!("{}:{path}", dir.display())));
    }
    // Only what the config names: the GitHub token is not passed (the runner pushes and posts; an agent
    // says what it has to say in its result), so a prompt-injected agent cannot act as the user there.
    let pass = config.worker.pass_env.clone();
    // Every secret the config names, not only those passed: a work log must not show the webhook URL
    // or the dashboard token an agent came across.
    EnvSpec { pass, set, secrets: crate::redact::config_secrets(config) }
}

/// The agent `worker.agent` names, with its `[worker.claude]`, `[worker.codex]` or `[worker.command]` options.
pub fn agent_config(config: &Config) -> AgentConfig {
    agent_named(config, &config.worker.agent)
}

/// The agent `name` (`claude`, `codex` or `command`; anything else is Claude Code, as the config
/// refuses other names), with its options: a run's fallback agent, or the one a session recorded.
pub fn agent_named(config: &Config, name: &str) -> AgentConfig {
    let w = &config.worker;
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
    match name {
        "codex" => AgentConfig::Codex(CodexConfig {
            program: w.codex.program.clone(),
            sandbox: w.codex.sandbox.clone(),
            model: opt(&w.codex.model),
            extra_args: Vec::new(),
        }),
        "command" => {
            let (program, args) =
                w.command.argv.split_first().map(|(p, a)| (p.clone(), a.to_vec())).unwrap_or_default();
            AgentConfig::Command(CommandConfig { program, args })
        }
        _ => AgentConfig::Claude(ClaudeConfig {
            program: w.claude.program.clone(),
            permission_mode: opt(&w.claude.permission_mode),
            model: opt(&w.claude.model),
            extra_args: Vec::new(),
        }),
    }
}

/// An agent made read-only, for triage and for a `plan` worker: Claude Code in
/// `analyzer.permission_mode` (`plan`), Codex in `analyzer.codex_sandbox` (`read-only`). A command agent
/// runs as configured; the kernel sandbox, which leaves the repository's `.git` unwritable, still holds.
pub fn read_only(agent: AgentConfig, config: &Config) -> AgentConfig {
    let a = &config.analyzer;
    match agent {
        AgentConfig::Claude(mut c) => {
            c.permission_mode = (!a.permission_mode.is_empty()).then(|| a.permission_mode.clone());
            AgentConfig::Claude(c)
        }
        AgentConfig::Codex(mut c) => {
            c.sandbox = a.codex_sandbox.clone();
            AgentConfig::Codex(c)
        }
        other => other,
    }
}

/// `worker.idle_timeout`, `hard_timeout` and `kill_grace`.
pub fn worker_timeouts(config: &Config) -> Timeouts {
    Timeouts {
        idle: config.worker.idle_timeout.std(),
        hard: config.worker.hard_timeout.std(),
        grace: config.worker.kill_grace.std(),
        ..Timeouts::default()
    }
}
