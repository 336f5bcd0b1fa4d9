//! Prompt templates: the product's voice to the agent.
//!
//! Defaults live in `prompts/*.md` at the repository root and are embedded in the binary; a user may put
//! a file with the same name in an override directory. Templates are rendered in strict mode: a
//! variable the context does not have is an error, raised before any process starts.
//!
//! Untrusted text (anything from a task, a forge or a CI run) reaches a template only through the
//! `data` filter (a block) or `data_inline` (within a line), which fence it between
//! `<untrusted-data-NONCE …>` and `</untrusted-data-NONCE>`. The nonce is random, drawn afresh for
//! every rendered prompt, and redrawn until no untrusted text contains it, so no text can close its
//! fence: a forged closing tag (any spelling, case or zero-width variant) is just more data. Templates
//! get the tag name as `fence`, to tell the agent that only this exact tag delimits data. Identifiers
//! from a forge (comment ids, commit shas) go through `ident`, which fences anything that is not a
//! plain identifier. Template values are never themselves rendered as templates, so `{{ 7*7 }}` in a
//! comment stays `{{ 7*7 }}`.

use std::path::{Path, PathBuf};

use minijinja::{AutoEscape, Environment, Error, ErrorKind, State, UndefinedBehavior, Value, context};
use serde::Serialize;

use super::PromptKind;
use crate::redact::Redactor;

/// The embedded defaults, in [`PromptKind::ALL`] order.
pub const DEFAULT_TEMPLATES: [(&str, &str); 8] = [
    ("queued.md", include_str!("../../prompts/queued.md")),
    ("in_progress.md", include_str!("../../prompts/in_progress.md")),
    ("fix_ci.md", include_str!("../../prompts/fix_ci.md")),
    ("fix_comments.md", include_str!("../../prompts/fix_comments.md")),
    ("pr_review.md", include_str!("../../prompts/pr_review.md")),
    ("fix_conflicts.md", include_str!("../../prompts/fix_conflicts.md")),
    ("plan.md", include_str!("../../prompts/plan.md")),
    ("analyzer.md", include_str!("../../prompts/analyzer.md")),
];

/// Everything a template may use. Fields that do not apply to a kind are empty or `none`, never absent,
/// so one template language works for all kinds and a typo is always caught.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PromptContext {
    pub task: TaskContext,
    pub run: RunContext,
    /// `github`, `gitlab` or `local`: who opens the PR and where replies go.
    pub forge: String,
    /// How the forge names the run's change: `change.noun` is "pull request" (GitHub, local) or "merge
    /// request" (GitLab), `change.short` "PR" or "MR".
    pub change: crate::domain::ChangeWords,
    pub pr: Option<PrContext>,
    pub failed_checks: Vec<FailedCheck>,
    pub comments: Vec<ReviewComment>,
    /// Checks that must be green before a PR can pass review (from config), e.g. "macOS UI Tests".
    pub required_checks: Vec<String>,
    /// Extra acceptance criteria from config (e.g. "UI changes include a screen recording").
    pub acceptance_criteria: Vec<String>,
    /// For the analyzer: the filters already applied, so it does not re-check them.
    pub analyzer_notes: Vec<String>,
    /// For `pr_review`: the repository's own review rules (`repos.NAME.review_rules`), file by file.
    pub review_rules: Vec<ReviewRule>,
    /// For `fix_comments` after a failed review: the review's findings at this head.
    pub review_findings: Vec<ReviewComment>,
    /// The plan a human approved, for the workers that implement it; for a `plan` worker writing a new
    /// revision, the one sent back. Written by an agent from untrusted text: fenced as data.
    pub plan: Option<String>,
    /// For a `plan` worker: what the human asked to change in the plan sent back.
    pub plan_feedback: Option<String>,
    /// The questions this run's workers asked and the answers they got, oldest first.
    pub answers: Vec<AnsweredQuestion>,
    /// For the analyzer's second try: why its first answer could not be used. It quotes the agent's own
    /// output, so templates fence it as data.
    pub previous_error: Option<String>,
}

pub use crate::workspace::ReviewRule;

#[derive(Debug, Clone, Default, Serialize)]
pub struct TaskContext {
    pub gid: String,
    pub title: String,
    pub description: String,
    pub notes: String,
    pub url: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct RunContext {
    pub id: i64,
    pub repo: String,
    pub branch: String,
    pub base_branch: String,
    pub worktree: String,
    /// Set for `in_progress` when the previous worker's session is resumed.
    pub resumed_session: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct PrContext {
    pub url: String,
    pub number: i64,
    pub head_sha: Option<String>,
    pub draft: bool,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct FailedCheck {
    pub name: String,
    pub conclusion: String,
    pub url: Option<String>,
    /// The last lines of the check's log, already bounded by the caller (see [`tail`]).
    pub log_tail: String,
}

/// A question a worker of this run asked, and a human's answer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AnsweredQuestion {
    pub question: String,
    pub answer: String,
    /// Who answered (a forge login, an OS user, `web`).
    pub by: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ReviewComment {
    pub id: String,
    pub author: String,
    pub path: Option<String>,
    pub line: Option<i64>,
    pub body: String,
}

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("prompt template {file}: {source}")]
    Template {
        /// The template's name, `<kind>.md`.
        name: String,
        /// Where it came from: the override file's path, or the name and "(embedded default)".
        file: String,
        #[source]
        source: minijinja::Error,
    },
    #[error("prompt override {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The loaded templates: the defaults, each replaced by an override file when one exists.
pub struct Prompts {
    env: Environment<'static>,
    sources: Vec<(String, PromptSource)>,
    /// Applied to every rendered prompt: a prompt goes to the model provider, and any part of it (a CI
    /// log, a comment, task notes) may carry a secret.
    redactor: Redactor,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptSource {
    Embedded,
    Override(PathBuf),
}

impl Prompts {
    pub fn embedded() -> Self {
        Self::load(None).expect("embedded prompt templates are checked by tests")
    }

    /// Defaults overridden by `<dir>/<kind>.md` where present. Syntax errors are reported now.
    pub fn with_overrides(dir: &Path) -> Result<Self, PromptError> {
        Self::load(Some(dir))
    }

    fn load(dir: Option<&Path>) -> Result<Self, PromptError> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_keep_trailing_newline(true);
        env.add_filter("data", data_filter);
        env.add_filter("data_inline", data_inline_filter);
        env.add_filter("ident", ident_filter);
        let mut sources = Vec::new();
        for (name, default) in DEFAULT_TEMPLATES {
            let path = dir.map(|d| d.join(name));
            let (text, source) = match path {
                Some(p) if p.is_file() => {
                    let text = std::fs::read_to_string(&p)
                        .map_err(|source| PromptError::Io { path: p.clone(), source })?;
                    (text, PromptSource::Override(p))
                }
                _ => (default.to_string(), PromptSource::Embedded),
            };
            env.add_template_owned(name.to_string(), text).map_err(|e| PromptError::Template {
                name: name.to_string(),
                file: describe_source(name, &source),
                source: e,
            })?;
            sources.push((name.to_string(), source));
        }
        Ok(Prompts { env, sources, redactor: Redactor::default() })
    }

    /// These templates, with every secret of `redactor` replaced in each prompt they render.
    pub fn redacting(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// Where each template came from, for `executor doctor` and the work log.
    pub fn sources(&self) -> &[(String, PromptSource)] {
        &self.sources
    }

    pub fn render(&self, kind: PromptKind, ctx: &PromptContext) -> Result<String, PromptError> {
        let name = kind.template_name();
        let file = self
            .sources
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, s)| describe_source(n, s))
            .unwrap_or_else(|| name.clone());
        let err = |source| PromptError::Template { name: name.clone(), file: file.clone(), source };
        let tmpl = self.env.get_template(&name).map_err(err)?;
        let values = Value::from_serialize(ctx);
        let fence = fence_for(&serde_json::to_string(ctx).unwrap_or_default());
        let prompt = tmpl.render(context! { fence => fence, ..values }).map_err(err)?;
        Ok(self.redactor.redact(&prompt))
    }

    /// Renders every template with a fully populated sample context: finds unknown variables in
    /// overrides at startup rather than when a worker is due.
    pub fn check(&self) -> Result<(), PromptError> {
        let ctx = sample_context();
        for kind in PromptKind::ALL {
            self.render(kind, &ctx)?;
        }
        Ok(())
    }
}

fn describe_source(name: &str, source: &PromptSource) -> String {
    match source {
        PromptSource::Override(path) => path.display().to_string(),
        PromptSource::Embedded => format!("{name} (embedded default)"),
    }
}

/// What [`export_defaults`] did with one template file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exported {
    /// It did not exist: written.
    Written,
    /// It already held the default text.
    Unchanged,
    /// It holds edits: left as it is.
    Kept,
    /// It held edits and `overwrite` was asked: replaced by the default.
    Overwritten,
}

/// Writes the default templates into `dir` (for `executor prompts export DIR`). A file that already
/// exists with other text (a user's edits) is kept unless `overwrite`.
pub fn export_defaults(dir: &Path, overwrite: bool) -> Result<Vec<(PathBuf, Exported)>, PromptError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PromptError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut report = Vec::new();
    for (name, text) in DEFAULT_TEMPLATES {
        let path = dir.join(name);
        let what = match std::fs::read(&path) {
            Ok(existing) if existing == text.as_bytes() => Exported::Unchanged,
            Ok(_) if !overwrite => Exported::Kept,
            Ok(_) => Exported::Overwritten,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Exported::Written,
            Err(e) => return Err(io(&path)(e)),
        };
        if matches!(what, Exported::Written | Exported::Overwritten) {
            std::fs::write(&path, text).map_err(io(&path))?;
        }
        report.push((path, what));
    }
    Ok(report)
}

/// The last `max_lines` lines of a log, and at most `max_bytes` of them, for [`FailedCheck::log_tail`]
/// and the local forge's CI output. A cut by bytes drops the line it lands in: redaction matches whole
/// values, and the end of a token cut in half (its whole random part) would pass it. A single line
/// longer than `max_bytes` keeps its end, less the partial word the cut made.
pub fn tail(log: &str, max_lines: usize, max_bytes: usize) -> String {
    let body = log.strip_suffix('\n').unwrap_or(log);
    let start = body.rmatch_indices('\n').nth(max_lines.saturating_sub(1)).map(|(i, _)| i + 1).unwrap_or(0);
    let tail = &log[start..];
    if tail.len() <= max_bytes {
        return tail.to_string();
    }
    let mut cut = tail.len() - max_bytes;
    while !tail.is_char_boundary(cut) {
        cut += 1;
    }
    let rest = &tail[cut..];
    if tail[..cut].ends_with('\n') {
        return rest.to_string();
    }
    match rest.find('\n') {
        Some(end) if end + 1 < rest.len() => rest[end + 1..].to_string(),
        _ => rest.trim_start_matches(|c: char| !c.is_whitespace()).trim_start().to_string(),
    }
}

const FENCE_STEM: &str = "untrusted-data-";

/// A fence tag name (`untrusted-data-<nonce>`) that occurs nowhere in `untrusted` (compared without
/// case, so no variant of it either). `untrusted` holds every value the prompt may show (its context
/// as JSON, where text keeps its letters and digits as they are).
fn fence_for(untrusted: &str) -> String {
    let haystack = untrusted.to_lowercase();
    loop {
        let tag = format!("{FENCE_STEM}{}", nonce());
        if !haystack.contains(&tag[FENCE_STEM.len()..]) {
            return tag;
        }
    }
}

/// 24 hex digits nobody can predict: std's hasher keys come from the OS's random source, fresh for each
/// `RandomState`, and the time and a counter vary the input.
fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let word = || {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_u128(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()),
        );
        h.finish()
    };
    format!("{:016x}{:08x}", word(), word() as u32)
}

/// The fence tag name of the prompt being rendered.
fn fence(state: &State) -> Result<String, Error> {
    state
        .lookup("fence")
        .and_then(|v| v.as_str().map(str::to_string))
        .filter(|f| f.starts_with(FENCE_STEM))
        .ok_or_else(|| Error::new(ErrorKind::InvalidOperation, "the data filters need the prompt's `fence`"))
}

fn text_of(value: &Value) -> String {
    if value.is_none() || value.is_undefined() {
        String::new()
    } else if let Some(s) = value.as_str() {
        s.to_string()
    } else {
        value.to_string()
    }
}

/// `{{ text | data("label") }}`: untrusted text as a block of its own lines. The label is the
/// template's (say what the text is; never put untrusted text in it): only letters, digits, spaces and
/// `-_.:` are kept.
fn data_filter(state: &State, value: Value, label: Option<String>) -> Result<String, Error> {
    let fence = fence(state)?;
    let label: String = label
        .unwrap_or_else(|| "data".into())
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || " -_.:".contains(*c))
        .take(80)
        .collect();
    Ok(format!("<{fence} source=\"{label}\">\n{}\n</{fence}>", text_of(&value)))
}

/// `{{ text | data_inline }}`: untrusted text within a line (an author, a path, a check's name).
fn data_inline_filter(state: &State, value: Value) -> Result<String, Error> {
    let fence = fence(state)?;
    Ok(format!("<{fence}>{}</{fence}>", text_of(&value)))
}

/// `{{ id | ident }}`: an identifier from a forge (comment id, commit sha) as it is when it is a plain
/// one (letters, digits, `-_.`, at most 100), so the agent can type it; fenced otherwise.
fn ident_filter(state: &State, value: Value) -> Result<String, Error> {
    let text = text_of(&value);
    let plain = !text.is_empty()
        && text.len() <= 100
        && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if plain { Ok(text) } else { data_inline_filter(state, Value::from(text)) }
}

/// A context with every field set, used by [`Prompts::check`] and the tests.
pub fn sample_context() -> PromptContext {
    PromptContext {
        task: TaskContext {
            gid: "1207".into(),
            title: "Sample task".into(),
            description: "Sample description".into(),
            notes: "Sample notes".into(),
            url: Some("https://tracker.example/1207".into()),
        },
        run: RunContext {
            id: 1,
            repo: "owner/repo".into(),
            branch: "executor/1207".into(),
            base_branch: "main".into(),
            worktree: "/tmp/wt".into(),
            resumed_session: Some("session-1".into()),
        },
        forge: "github".into(),
        change: crate::domain::ChangeWords::PULL_REQUEST,
        pr: Some(PrContext {
            url: "https://github.com/owner/repo/pull/1".into(),
            number: 1,
            head_sha: Some("abc123".into()),
            draft: true,
        }),
        failed_checks: vec![FailedCheck {
            name: "build".into(),
            conclusion: "failure".into(),
            url: Some("https://ci.example/1".into()),
            log_tail: "error: it broke".into(),
        }],
        comments: vec![ReviewComment {
            id: "c1".into(),
            author: "alex".into(),
            path: Some("src/lib.rs".into()),
            line: Some(10),
            body: "Please rename this.".into(),
        }],
        required_checks: vec!["macOS UI Tests".into()],
        acceptance_criteria: vec!["UI changes include a screen recording".into()],
        analyzer_notes: vec!["source: backlog".into()],
        review_rules: vec![ReviewRule {
            path: ".cursor/rules/style.mdc".into(),
            text: "Prefer small functions.".into(),
        }],
        review_findings: vec![ReviewComment {
            id: "finding-1".into(),
            author: "executor review".into(),
            path: Some("src/lib.rs".into()),
            line: Some(12),
            body: "The error is swallowed here.".into(),
        }],
        plan: Some("### Approach\n\nAdd the flag behind a setting.\n".into()),
        plan_feedback: Some("Keep the old default.".into()),
        answers: vec![AnsweredQuestion {
            question: "Which API version?".into(),
            answer: "v2, please.".into(),
            by: "alex".into(),
        }],
        previous_error: Some("the agent's structured result does not match the analyzer schema".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_prompt_names_the_change_as_its_forge_does() {
        let prompts = Prompts::embedded();
        for kind in PromptKind::ALL {
            let gitlab =
                PromptContext { change: crate::domain::ChangeWords::MERGE_REQUEST, ..sample_context() };
            let text = prompts.render(kind, &gitlab).unwrap();
            assert!(!text.contains("pull request"), "{kind:?} says pull request on GitLab");
            let text = prompts.render(kind, &sample_context()).unwrap();
            assert!(!text.contains("merge request"), "{kind:?} says merge request on GitHub");
        }
        let queued = PromptKind::Worker(crate::domain::WorkerKind::Queued);
        let gitlab = PromptContext { change: crate::domain::ChangeWords::MERGE_REQUEST, ..sample_context() };
        assert!(prompts.render(queued, &gitlab).unwrap().contains("open a merge request yourself"));
        assert!(prompts.render(queued, &sample_context()).unwrap().contains("open a pull request yourself"));
    }

    #[test]
    fn a_fence_never_occurs_in_the_text_it_fences() {
        let a = fence_for("");
        assert!(a.starts_with(FENCE_STEM) && a.len() == FENCE_STEM.len() + 24, "{a}");
        assert_ne!(a, fence_for(""), "a new nonce for every prompt");
        // Text that happens to hold many nonces still gets a fence it does not contain.
        let text: String = (0..200).map(|_| fence_for("").to_uppercase()).collect();
        let f = fence_for(&text);
        assert!(!text.to_lowercase().contains(&f[FENCE_STEM.len()..]));
    }

    #[test]
    fn tail_is_bounded() {
        let log: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let t = tail(&log, 20, 10_000);
        assert!(t.starts_with("line 980\n"), "{t}");
        assert_eq!(t.lines().count(), 20);
        assert!(t.ends_with("line 999\n"));
        assert!(tail(&log, 1000, 50).len() <= 50);
        assert_eq!(tail("short", 10, 100), "short");
        assert!(tail(&"é".repeat(100), 10, 11).len() <= 11);
    }

    /// Whether any 12 consecutive characters of `secret` are in `text`.
    fn any_part_of(secret: &str, text: &str) -> bool {
        (0..=secret.len() - 12).any(|i| text.contains(&secret[i..i + 12]))
    }

    #[test]
    fn a_cut_never_keeps_the_end_of_a_token() {
        let token = "ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8";
        for at in 0..token.len() {
            // The byte limit lands `at` characters into the token, in a line and in one long line.
            let lines = format!("first line\nexport GH_TOKEN={token} # set\nerror: tests failed\n");
            let keep = lines.len() - lines.find(token).unwrap_or(0) - at;
            let t = tail(&lines, 200, keep);
            assert!(!any_part_of(token, &t), "cut {at}: {t:?}");
            assert!(t.ends_with("error: tests failed\n"), "{t:?}");
            let one = format!("x={token} and then the failure");
            let t = tail(&one, 200, one.len() - 2 - at);
            assert!(!any_part_of(token, &t), "cut {at}: {t:?}");
            assert!(t.ends_with("the failure"), "{t:?}");
        }
    }
}
