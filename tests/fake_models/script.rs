//! What a fake model does: roles chosen by the prompt, each a list of steps played in order.

use std::sync::Arc;

use serde_json::Value;

/// Builds the final answer from the request's whole text (the prompt names, say, the comment ids a
/// `fix_comments` worker must answer).
pub type AnswerFn = Arc<dyn Fn(&str) -> Value + Send + Sync>;

/// One thing the model does in its turn.
#[derive(Clone)]
pub enum Step {
    /// Runs a shell command with the CLI's own command tool (Claude Code's `Bash`, Codex's
    /// `exec_command`).
    Shell(String),
    /// Creates a file, its path relative to the working directory, with the CLI's own file tool (Claude
    /// Code's `Write`, Codex's `apply_patch`).
    Write { path: String, content: String },
    /// The final answer: the JSON the worker kind's schema asks for (Claude Code's `StructuredOutput`
    /// tool when the CLI offers it, else the final message's text).
    Answer(AnswerFn),
}

impl Step {
    pub fn shell(command: &str) -> Step {
        Step::Shell(command.to_string())
    }

    pub fn write(path: &str, content: &str) -> Step {
        Step::Write { path: path.to_string(), content: content.to_string() }
    }

    pub fn answer(f: impl Fn(&str) -> Value + Send + Sync + 'static) -> Step {
        Step::Answer(Arc::new(f))
    }
}

/// The model's part for one kind of prompt: the prompt contains `phrase`.
#[derive(Clone)]
pub struct Role {
    pub name: String,
    pub phrase: String,
    pub steps: Vec<Step>,
}

impl Role {
    pub fn new(name: &str, phrase: &str, steps: Vec<Step>) -> Role {
        Role { name: name.to_string(), phrase: phrase.to_string(), steps }
    }
}

#[derive(Clone, Default)]
pub struct Script {
    pub roles: Vec<Role>,
}

/// What to do for one request.
pub enum Play<'a> {
    Step(&'a Step),
    /// Every step was played (the answer's tool result came back): end the turn with a short text.
    Done,
    /// No role's phrase is in the request.
    Unscripted,
}

impl Script {
    pub fn new(roles: Vec<Role>) -> Script {
        Script { roles }
    }

    /// The role whose phrase `text` contains (the first one listed, when several do).
    pub fn role_for(&self, text: &str) -> Option<&Role> {
        self.roles.iter().find(|r| text.contains(&r.phrase))
    }

    /// The step after `done` tool results.
    pub fn play<'a>(role: Option<&'a Role>, done: usize) -> Play<'a> {
        match role {
            None => Play::Unscripted,
            Some(r) => r.steps.get(done).map(Play::Step).unwrap_or(Play::Done),
        }
    }
}

/// Every string in a JSON document, joined by newlines: the request's text as the model reads it
/// (prompts, system text, tool results), unescaped.
pub fn all_text(v: &Value) -> String {
    fn walk(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(map) => map.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    walk(v, &mut out);
    out
}

/// The ids of the comments a `fix_comments` prompt lists (its headings: ``### Comment `ID` by …``).
pub fn comment_ids(text: &str) -> Vec<String> {
    text.split("### Comment `")
        .skip(1)
        .filter_map(|rest| rest.split_once('`').map(|(id, _)| id.to_string()))
        .collect()
}

/// The path after `label` up to the end of its line (Claude Code's system text names its working
/// directory so: `Primary working directory: /…`).
pub fn line_after(text: &str, label: &str) -> Option<String> {
    let start = text.find(label)? + label.len();
    let rest = text.get(start..)?;
    Some(rest.lines().next()?.trim().to_string())
}
