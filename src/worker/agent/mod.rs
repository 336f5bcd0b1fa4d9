//! Agent adapters: how to start each coding agent and how to read what it prints.
//!
//! An adapter does two pure things: it turns a [`Launch`] into a program and arguments, and it turns
//! each line of the agent's output into zero or more [`AgentEvent`]s. It never spawns anything and never
//! fails on output: a line it does not understand becomes [`AgentEvent::Raw`].

mod claude;
mod codex;
mod command;

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::{Price, Pricing};

pub use claude::{ClaudeConfig, ClaudeParser, budget_arg};
pub use codex::{CodexConfig, CodexParser};
pub use command::{CommandConfig, CommandParser};

/// Which agent runs a worker, with its settings from the config file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AgentConfig {
    Claude(ClaudeConfig),
    Codex(CodexConfig),
    Command(CommandConfig),
}

/// What one launch needs beyond the agent's fixed settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Launch {
    /// The worktree the agent works in.
    pub cwd: PathBuf,
    /// Continue this agent session instead of starting fresh.
    pub resume_session: Option<String>,
    pub max_turns: Option<u32>,
    /// JSON Schema of the structured result, when the kind has one.
    pub result_schema: Option<Value>,
    /// The same schema written to a file, for agents that take a path (Codex `--output-schema`).
    pub result_schema_file: Option<PathBuf>,
    /// What is left of the run's budget, for agents that can cap themselves (Claude `--max-budget-usd`).
    pub max_budget_usd: Option<f64>,
    /// Directories outside the worktree the agent must be able to write: the worktree's git
    /// directories, so a sandboxed agent (Codex `workspace-write`) can commit.
    pub writable_dirs: Vec<PathBuf>,
    /// executor contains the agent (Landlock): the CLI's own sandbox, which cannot set itself up
    /// inside, is switched off (Codex's bubblewrap needs user namespaces and mounts Landlock denies).
    pub contained: bool,
}

/// The program and arguments to run. Never contains the prompt: that goes on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    pub program: String,
    pub args: Vec<String>,
}

impl CommandLine {
    /// A readable one-line form for the work log; long arguments (an inline JSON Schema) are shortened.
    pub fn display(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .map(|a| {
                let short: String = a.chars().take(120).collect();
                let short = if short.len() < a.len() { format!("{short}…") } else { short };
                if short.is_empty() || short.contains(|c: char| c.is_whitespace() || c == '\'') {
                    format!("'{}'", short.replace('\'', "'\\''"))
                } else {
                    short
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AgentError {
    /// A session id goes on the agent's command line, so it must look like one.
    #[error(
        "refusing to resume session {0:?}: a session id must start with a letter or digit and contain only letters, digits, '-' and '_'"
    )]
    InvalidSessionId(String),
    #[error("the command agent has no program configured")]
    EmptyProgram,
    /// What is left of the budget rounds down to nothing the agent's budget flag can express: this is a
    /// budget stop, not a launch.
    #[error("no budget left to start an agent with (${0} remaining)")]
    NoBudgetLeft(f64),
}

/// Token counts as the agents report them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_creation: u64,
}

/// The agent's own final word on its run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentResult {
    /// Claude's `subtype` (`success`, `error_max_turns`, ...), Codex's `completed`/`failed`, or
    /// `exit` for a plain command.
    pub subtype: String,
    pub is_error: bool,
    pub budget_exceeded: bool,
    pub num_turns: Option<u32>,
    pub cost_usd: Option<f64>,
    /// `cost_usd` is executor's estimate from the price table (Codex), not the agent's own figure.
    pub cost_estimated: bool,
    pub tokens: Option<Tokens>,
    /// The final message text.
    pub text: Option<String>,
    /// The structured result (Claude `structured_output`, a JSON final message, a command's JSON line).
    pub structured: Option<Value>,
    pub session_id: Option<String>,
    /// The output itself shows the agent reached its end: Claude's `result` event, Codex's last turn
    /// completed, a command's last line a JSON object (its result line). An adopted agent's exit status
    /// is unknown (it is not our child), so without this it never reads as finished.
    pub reached_end: bool,
}

/// One thing the agent did or said, in a form common to all agents.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The session (Claude) or thread (Codex) id, with what else the agent said about itself.
    Session {
        id: String,
        model: Option<String>,
        tools: Vec<String>,
    },
    Text(String),
    Reasoning(String),
    ToolCall {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        id: String,
        output: String,
        is_error: bool,
    },
    /// Usage reported mid-run: Claude per assistant message, Codex per turn. Amounts are what this
    /// event adds to the worker's totals. `estimated` when the dollars come from the price table rather
    /// than from the agent.
    Usage {
        tokens: Tokens,
        cost_usd: Option<f64>,
        estimated: bool,
    },
    /// This worker's whole usage so far, replacing what earlier events added up to: Codex reports the
    /// running totals of its thread, from two sources (the session file after every model request,
    /// stdout after every turn) whose baseline may only be learnt late.
    UsageSoFar {
        tokens: Tokens,
        cost_usd: Option<f64>,
        estimated: bool,
    },
    /// The agent could not continue the session it was asked to resume (it no longer exists where the
    /// agent looks for it).
    ResumeFailed(String),
    /// An error the agent reported without ending (a Codex `error` item, a failed turn).
    Error(String),
    Result(AgentResult),
    /// A line that is not a known event: plain text, stderr, malformed or unknown JSON.
    Raw(String),
}

/// Reads an agent's output line by line. Stateful, because some facts only exist across lines (Codex
/// usage per turn, the command agent's last JSON line).
pub trait OutputParser: Send {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent>;
    /// The output has ended (the process exited): emit whatever can only be known at the end.
    fn finish(&mut self, exit_code: Option<i32>) -> Vec<AgentEvent>;
    /// A line of the agent's own session file (Codex's rollout under `CODEX_HOME/sessions`), which
    /// reports usage after every model request rather than at the end of a turn.
    fn parse_session_line(&mut self, _line: &str) -> Vec<AgentEvent> {
        Vec::new()
    }
}

/// What a parser needs to account for usage as it goes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Accounting {
    /// Dollars per million tokens, to estimate a cost the agent does not report (yet).
    pub pricing: Pricing,
    /// Usage of the agent's thread before this worker: Codex reports running totals of the whole thread,
    /// so a resumed thread's earlier turns are subtracted. Only a fallback for Codex: its session file
    /// holds the exact total before this worker.
    pub baseline: Tokens,
    /// When this worker started: a session file's lines from before it are earlier workers' usage.
    pub started_at: Option<DateTime<Utc>>,
}

impl Tokens {
    /// Each count the larger of the two: for counters that only grow, reported by several sources.
    pub fn max(&self, other: &Tokens) -> Tokens {
        Tokens {
            input: self.input.max(other.input),
            output: self.output.max(other.output),
            cache_read: self.cache_read.max(other.cache_read),
            cache_creation: self.cache_creation.max(other.cache_creation),
        }
    }

    /// What `self` adds to `earlier`, for counters that only grow (a thread's running totals).
    pub fn since(&self, earlier: &Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_sub(earlier.input),
            output: self.output.saturating_sub(earlier.output),
            cache_read: self.cache_read.saturating_sub(earlier.cache_read),
            cache_creation: self.cache_creation.saturating_sub(earlier.cache_creation),
        }
    }

    pub fn accumulate(&mut self, more: &Tokens) {
        self.input += more.input;
        self.output += more.output;
        self.cache_read += more.cache_read;
        self.cache_creation += more.cache_creation;
    }
}

/// Dollars for `t` at `price` (dollars per million tokens). `input_includes_cache_read`: OpenAI counts
/// cached input inside `input_tokens`; Anthropic counts it apart.
pub fn estimate_usd(price: &Price, t: &Tokens, input_includes_cache_read: bool) -> f64 {
    let fresh_input = if input_includes_cache_read { t.input.saturating_sub(t.cache_read) } else { t.input };
    (fresh_input as f64 * price.input
        + t.output as f64 * price.output
        + t.cache_read as f64 * price.cache_read
        + t.cache_creation as f64 * price.cache_write)
        / 1_000_000.0
}

/// The program as a shell would find it: a path (`~/` expanded), or a name on `PATH`; `None` when there
/// is no executable file there.
pub fn locate_program(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable =
        |p: &std::path::Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        // `~/` was expanded when the config was read (`Worker::expand_programs`), as for the spawn.
        let p = std::path::PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
}

impl AgentConfig {
    /// The program this agent runs.
    pub fn program(&self) -> &str {
        match self {
            AgentConfig::Claude(c) => &c.program,
            AgentConfig::Codex(c) => &c.program,
            AgentConfig::Command(c) => &c.program,
        }
    }

    /// Refuses an agent whose program cannot be found, naming it and the key that sets it — before any
    /// run moves, instead of one failed start per run.
    pub fn check_program(&self) -> Result<std::path::PathBuf, String> {
        let key = match self {
            AgentConfig::Claude(_) => "worker.claude.program",
            AgentConfig::Codex(_) => "worker.codex.program",
            AgentConfig::Command(_) => "worker.command.argv",
        };
        locate_program(self.program()).ok_or_else(|| {
            format!(
                "the agent program {:?} ({} agent) is not an executable file or on PATH: install it or set {key} \
                 (`executor doctor` checks the whole setup)",
                self.program(),
                self.name()
            )
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            AgentConfig::Claude(_) => "claude",
            AgentConfig::Codex(_) => "codex",
            AgentConfig::Command(_) => "command",
        }
    }

    /// Where the agent writes the session files executor follows for usage as it comes (Codex's
    /// `CODEX_HOME/sessions`, `CODEX_HOME` defaulting to `~/.codex`), given the worker's environment.
    /// `None` for agents whose usage comes on stdout.
    pub fn session_root(&self, var: &dyn Fn(&str) -> Option<PathBuf>) -> Option<PathBuf> {
        match self {
            AgentConfig::Codex(_) => {
                let home = var("CODEX_HOME").or_else(|| var("HOME").map(|h| h.join(".codex")))?;
                Some(home.join("sessions"))
            }
            AgentConfig::Claude(_) | AgentConfig::Command(_) => None,
        }
    }

    pub fn command_line(&self, launch: &Launch) -> Result<CommandLine, AgentError> {
        if let Some(id) = &launch.resume_session {
            check_session_id(id)?;
        }
        match self {
            AgentConfig::Claude(c) => c.command_line(launch),
            AgentConfig::Codex(c) => Ok(c.command_line(launch)),
            AgentConfig::Command(c) => c.command_line(),
        }
    }

    pub fn parser(&self, accounting: &Accounting) -> Box<dyn OutputParser> {
        match self {
            AgentConfig::Claude(c) => {
                Box::new(ClaudeParser::new(accounting.pricing.clone(), c.model.clone()))
            }
            AgentConfig::Codex(c) => Box::new(CodexParser::new(accounting, c.model.as_deref())),
            AgentConfig::Command(_) => Box::new(CommandParser::default()),
        }
    }
}

fn check_session_id(id: &str) -> Result<(), AgentError> {
    let ok = id.len() <= 200
        && id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok { Ok(()) } else { Err(AgentError::InvalidSessionId(id.chars().take(80).collect())) }
}

/// Parses a line as a JSON object; anything else (text, arrays, broken JSON) is `None`.
pub(crate) fn json_object(line: &str) -> Option<serde_json::Map<String, Value>> {
    let trimmed = line.trim();
    if !trimmed.starts_with('{') {
        return None;
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

pub(crate) fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

pub(crate) fn u64_field(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_ids_that_could_be_flags_are_refused() {
        let agent = AgentConfig::Claude(ClaudeConfig::default());
        for bad in ["", "--dangerously-skip-permissions", "a b", "x;rm -rf /", "$(id)"] {
            let launch = Launch { resume_session: Some(bad.into()), ..Default::default() };
            assert!(agent.command_line(&launch).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn display_quotes_and_shortens() {
        let cl =
            CommandLine { program: "claude".into(), args: vec!["-p".into(), "a b".into(), "x".repeat(500)] };
        let shown = cl.display();
        assert!(shown.starts_with("claude -p 'a b' xxx"));
        assert!(shown.len() < 200);
    }
}
