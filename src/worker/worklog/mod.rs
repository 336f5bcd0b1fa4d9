//! Work logs: `logs/{task_gid}/{kind}_{YYYY-MM-DD-HH-MM-SS}.md`, a readable Markdown record of one
//! worker — header, prompt, conversation, outcome.
//!
//! Everything written passes through a [`Redactor`] first, so a token that appears in the prompt, in a
//! tool's output or in the agent's text is written as `[REDACTED]`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::PromptKind;
use super::agent::AgentEvent;

mod read;
use super::outcome::WorkerOutcome;
use crate::domain::TaskGid;
pub use read::{find_newest, follow};

/// How much of a tool's input or output is kept in the log.
pub const TOOL_TEXT_LIMIT: usize = 2_000;
/// How much of one assistant message or raw line is kept.
pub const TEXT_LIMIT: usize = 20_000;
/// How much of the prompt is kept in the log.
pub const PROMPT_LIMIT: usize = 64 * 1024;
/// The last line of every finished work log; `follow` stops when it sees it.
pub const END_MARKER: &str = "<!-- executor:end -->";

const TIME_FORMAT: &str = "%Y-%m-%d-%H-%M-%S";

pub use crate::redact::Redactor;

/// The path of a new work log. The gid is a validated [`TaskGid`], so it is safe as a directory name.
pub fn log_path(logs_root: &Path, gid: &TaskGid, kind: PromptKind, at: DateTime<Utc>) -> PathBuf {
    logs_root.join(gid.as_str()).join(format!("{}_{}.md", kind.as_str(), at.format(TIME_FORMAT)))
}

/// What the header says about a worker.
#[derive(Debug, Clone)]
pub struct Header<'a> {
    pub task_gid: &'a TaskGid,
    pub run_id: i64,
    pub kind: PromptKind,
    pub agent: &'a str,
    pub command_line: &'a str,
    pub cwd: &'a Path,
    pub started_at: DateTime<Utc>,
    pub resumed_session: Option<&'a str>,
}

pub struct WorkLog {
    file: File,
    path: PathBuf,
    redactor: Redactor,
    in_raw_block: bool,
}

impl WorkLog {
    /// Creates the log for a new worker. If a log with the same second already exists (two workers of
    /// one kind started within a second), a `-2`, `-3`, ... suffix keeps both.
    pub fn create(
        logs_root: &Path,
        gid: &TaskGid,
        kind: PromptKind,
        at: DateTime<Utc>,
        redactor: Redactor,
    ) -> std::io::Result<WorkLog> {
        let base = log_path(logs_root, gid, kind, at);
        if let Some(dir) = base.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut n = 1;
        loop {
            let path = if n == 1 {
                base.clone()
            } else {
                base.with_file_name(format!("{}_{}-{n}.md", kind.as_str(), at.format(TIME_FORMAT)))
            };
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => return Ok(WorkLog::new(file, path, redactor)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// Reopens an existing log to continue it (after adopting a worker).
    pub fn append(path: &Path, redactor: Redactor) -> std::io::Result<WorkLog> {
        let file = OpenOptions::new().append(true).open(path)?;
        Ok(WorkLog::new(file, path.to_path_buf(), redactor))
    }

    /// What this log replaces: the secrets of its worker's environment and config.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    fn new(file: File, path: PathBuf, redactor: Redactor) -> WorkLog {
        WorkLog { file, path, redactor, in_raw_block: false }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes redacted text. A failing disk must not kill the supervision of a live agent, so errors are
    /// reported through tracing and otherwise ignored.
    fn write(&mut self, text: &str) {
        let text = self.redactor.redact(text);
        if let Err(e) = self.file.write_all(text.as_bytes()) {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot write work log");
        }
    }

    fn block(&mut self, text: &str) {
        self.close_raw();
        self.write(text);
    }

    fn close_raw(&mut self) {
        if self.in_raw_block {
            self.in_raw_block = false;
            self.write("`````\n\n");
        }
    }

    pub fn header(&mut self, h: &Header<'_>) {
        let mut s = format!(
            "# Work log: task {} · {}\n\n- **Task:** {}\n- **Run:** {}\n- **Kind:** {}\n- **Agent:** {}\n- **Working directory:** `{}`\n- **Started:** {}\n",
            h.task_gid,
            h.kind,
            h.task_gid,
            match (h.run_id, h.kind) {
                (0, PromptKind::Analyzer) => "none (a triage)".to_string(),
                (0, _) => "none (a worker run by hand)".to_string(),
                (id, _) => id.to_string(),
            },
            h.kind,
            h.agent,
            h.cwd.display(),
            h.started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        );
        if let Some(id) = h.resumed_session {
            s.push_str(&format!("- **Resumes session:** `{id}`\n"));
        }
        s.push_str(&format!("- **Command:**\n\n{}\n", fenced("sh", h.command_line)));
        self.block(&s);
    }

    /// The prompt, up to [`PROMPT_LIMIT`]: a huge task text must not be copied whole into every
    /// worker's log (the agent got all of it; the private prompt file has it while the worker runs).
    pub fn prompt(&mut self, prompt: &str) {
        let shown = truncate(prompt, PROMPT_LIMIT);
        self.block(&format!("## Prompt\n\n{}\n## Conversation\n\n", fenced("markdown", &shown)));
    }

    /// A line of executor's own, e.g. that a restarted supervisor adopted the worker.
    pub fn note(&mut self, text: &str) {
        self.block(&format!("> **executor:** {text}\n\n"));
    }

    pub fn event(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::Raw(line) => {
                if !self.in_raw_block {
                    self.in_raw_block = true;
                    self.write("`````text\n");
                }
                let line = line.replace("`````", "` ` ` ` `");
                self.write(&format!("{}\n", truncate(&line, TEXT_LIMIT)));
            }
            AgentEvent::Session { id, model, tools } => {
                let mut s = format!("**Session** `{id}`");
                if let Some(m) = model {
                    s.push_str(&format!(" · model `{m}`"));
                }
                if !tools.is_empty() {
                    s.push_str(&format!(" · {} tools", tools.len()));
                }
                self.block(&format!("{s}\n\n"));
            }
            AgentEvent::Text(text) => {
                self.block(&format!("### Assistant\n\n{}\n\n", truncate(text, TEXT_LIMIT)));
            }
            AgentEvent::Reasoning(text) => {
                let quoted = truncate(text, TOOL_TEXT_LIMIT).replace('\n', "\n> ");
                self.block(&format!("> _thinking:_ {quoted}\n\n"));
            }
            AgentEvent::ToolCall { id, name, input } => {
                let pretty = serde_json::to_string_pretty(input).unwrap_or_default();
                // Redact before truncating, so a cut cannot leave half a secret unrecognised.
                let pretty = self.redactor.redact(&pretty);
                self.block(&format!(
                    "#### Tool call: `{name}` ({id})\n\n{}\n",
                    fenced("json", &truncate(&pretty, TOOL_TEXT_LIMIT))
                ));
            }
            AgentEvent::ToolResult { id, output, is_error } => {
                let output = self.redactor.redact(output);
                let what = if *is_error { "Tool error" } else { "Tool output" };
                self.block(&format!(
                    "{what} ({id}):\n\n{}\n",
                    fenced("text", &truncate(&output, TOOL_TEXT_LIMIT))
                ));
            }
            AgentEvent::Usage { .. } | AgentEvent::UsageSoFar { .. } => {}
            AgentEvent::ResumeFailed(msg) => {
                self.block(&format!(
                    "**The session to resume does not exist:** {}\n\n",
                    truncate(msg, TOOL_TEXT_LIMIT)
                ));
            }
            AgentEvent::Error(msg) => {
                self.block(&format!("**Agent error:** {}\n\n", truncate(msg, TOOL_TEXT_LIMIT)));
            }
            AgentEvent::Result(r) => {
                let mut s = format!(
                    "### Agent result: {}{}\n\n",
                    r.subtype,
                    if r.is_error { " (error)" } else { "" }
                );
                if let Some(t) = &r.text {
                    s.push_str(&format!("{}\n\n", truncate(t, TEXT_LIMIT)));
                }
                if let Some(v) = &r.structured {
                    let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
                    s.push_str(&format!("{}\n", fenced("json", &truncate(&pretty, TEXT_LIMIT))));
                }
                self.block(&s);
            }
        }
    }

    pub fn footer(&mut self, o: &WorkerOutcome) {
        let mut s = format!("## Outcome\n\n- **Ended:** {}", o.reason.describe());
        match o.exit_code {
            Some(code) => s.push_str(&format!(" (exit code {code})\n")),
            None => s.push('\n'),
        }
        s.push_str(&format!(
            "- **Duration:** {}\n",
            humantime::format_duration(std::time::Duration::from_secs(o.duration.as_secs()))
        ));
        let or_unknown = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
        s.push_str(&format!("- **Turns:** {}\n", or_unknown(o.num_turns.map(|n| n.to_string()))));
        let estimate = if o.cost_estimated { " (estimated from the price table)" } else { "" };
        s.push_str(&format!(
            "- **Cost:** {}{estimate}\n",
            or_unknown(o.cost_usd.map(|c| format!("${c:.4}")))
        ));
        s.push_str(&format!(
            "- **Tokens:** {} in, {} out, {} cache read, {} cache write\n",
            o.tokens.input, o.tokens.output, o.tokens.cache_read, o.tokens.cache_creation
        ));
        s.push_str(&format!(
            "- **Session:** {}\n",
            or_unknown(o.session_id.as_ref().map(|id| format!("`{id}`")))
        ));
        match (&o.parsed, &o.result_error) {
            (_, Some(err)) => s.push_str(&format!("- **Result:** not usable: {err}\n")),
            (Some(p), None) => {
                s.push_str(&format!("- **Result:** `{}`\n", serde_json::to_string(p).unwrap_or_default()))
            }
            (None, None) => {}
        }
        if !o.stopped.is_empty() {
            s.push_str(&format!("- **Stopped:** {}\n", super::tree::describe(&o.stopped)));
        }
        s.push_str(&format!("\n{END_MARKER}\n"));
        self.block(&s);
    }

    /// Closes a log whose worker never ran (it failed to start), so `follow` does not wait forever.
    pub fn abandon(&mut self, why: &str) {
        self.note(why);
        self.block(&format!("{END_MARKER}\n"));
    }

    pub fn flush(&mut self) {
        let _ = self.file.flush();
    }
}

/// Fences `content` with more backticks than any run inside it, so the content cannot close the fence.
fn fenced(lang: &str, content: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in content.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    let nl = if content.ends_with('\n') { "" } else { "\n" };
    format!("{fence}{lang}\n{content}{nl}{fence}\n")
}

/// Keeps the first `limit` bytes (at a char boundary) and says how much was cut.
pub fn truncate(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut cut = limit;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… [{} more bytes]", &text[..cut], text.len() - cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_prompt_is_logged_capped_with_what_was_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let gid = TaskGid::parse("9").unwrap();
        let mut log =
            WorkLog::create(dir.path(), &gid, PromptKind::Analyzer, Utc::now(), Redactor::default()).unwrap();
        let prompt = "p".repeat(50 * 1024 * 1024);
        log.prompt(&prompt);
        log.flush();
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert!(text.len() < PROMPT_LIMIT + 1024, "{} bytes", text.len());
        assert!(text.contains(&format!("[{} more bytes]", prompt.len() - PROMPT_LIMIT)));
    }

    #[test]
    fn fences_survive_backticks_and_truncation_is_marked() {
        let f = fenced("text", "a ```` b");
        assert!(f.starts_with("`````text\n"));
        let t = truncate(&"é".repeat(10), 5);
        assert!(t.starts_with("éé…"), "{t}");
        assert!(t.contains("more bytes"));
    }
}
