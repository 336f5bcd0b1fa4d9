//! Structured results: what each kind of run must hand back, as JSON Schemas for the agent and as types
//! for the code that acts on them.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::PromptKind;
use super::replies::Reply;
use crate::domain::WorkerKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
}

/// `pr_review`: is this PR ready for a human?
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewResult {
    pub verdict: Verdict,
    pub summary: String,
    /// One per concrete problem; executor posts them on the pull request as a review.
    #[serde(default)]
    pub findings: Vec<Finding>,
}

/// A problem the review found, on a file and line when it is about one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub line: Option<i64>,
    pub body: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnalysisStatus {
    /// Worth doing; a human should look at the analysis before approving.
    ForReview,
    /// Clear and ready; waiting for the human's go.
    AwaitingGo,
    /// Not for an agent (unclear, too large, design work, ...).
    Skip,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Low,
    Medium,
    High,
}

/// The analyzer's triage of one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalysisResult {
    pub status: AnalysisStatus,
    /// 1 (do first) to 5 (do last).
    pub priority: u8,
    pub complexity: Level,
    /// How likely an agent is to finish it without a human.
    pub feasibility: Level,
    pub summary: String,
    /// Checkable statements the pull request must meet; the `pr_review` prompt verifies them. Optional
    /// in an answer (an agent that leaves it out gives none); the analyzer bounds their number and size.
    #[serde(default)]
    pub acceptance_criteria: Vec<String>,
}

/// A worker kind without a verdict may still say what it did; a `fix_comments` worker also answers the
/// comments its prompt listed, here (see [`super::replies`]). Any of them may instead ask a human a
/// question it cannot answer itself (`{"question": "…"}`): the run then waits for the answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkSummary {
    pub summary: Option<String>,
    #[serde(default)]
    pub replies: Vec<Reply>,
    #[serde(default)]
    pub question: Option<String>,
}

/// A `plan` worker's plan, for a human to approve before any code is written; or its question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanResult {
    pub approach: String,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub risks: String,
    #[serde(default)]
    pub testing: String,
    /// Set instead of a plan when the agent cannot plan without a human's answer.
    #[serde(default)]
    pub question: Option<String>,
}

impl PlanResult {
    /// The plan as people and the implementing agent read it: Markdown, one heading per part.
    pub fn to_markdown(&self) -> String {
        let mut md = format!("### Approach\n\n{}\n", self.approach.trim());
        if !self.files.is_empty() {
            md.push_str("\n### Files\n\n");
            for f in &self.files {
                md.push_str(&format!("- {}\n", f.trim()));
            }
        }
        for (heading, text) in [("Risks", &self.risks), ("How it will be tested", &self.testing)] {
            if !text.trim().is_empty() {
                md.push_str(&format!("\n### {heading}\n\n{}\n", text.trim()));
            }
        }
        md
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ParsedResult {
    Review(ReviewResult),
    Analysis(AnalysisResult),
    Plan(PlanResult),
    Work(WorkSummary),
}

impl ParsedResult {
    /// The question the worker asked instead of finishing, if it asked one (blank ones are none).
    pub fn question(&self) -> Option<&str> {
        let q = match self {
            ParsedResult::Work(w) => w.question.as_deref(),
            ParsedResult::Plan(p) => p.question.as_deref(),
            ParsedResult::Review(_) | ParsedResult::Analysis(_) => None,
        };
        q.map(str::trim).filter(|q| !q.is_empty())
    }
}

/// Why a run's structured result could not be used. Recorded on the outcome and in the work log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum ResultError {
    #[error(
        "the agent returned no structured result: its last output line that is a JSON object is read as \
         the result (a review: {{\"verdict\": \"pass\"|\"fail\", \"summary\": …}}; see docs/agents.md, \
         \"Your own agent\", for every kind)"
    )]
    Missing,
    #[error("the agent's structured result does not match the {kind} schema: {reason}")]
    Malformed { kind: &'static str, reason: String },
}

/// The JSON Schema the agent must fill in, for kinds that return a structured result.
pub fn schema(kind: PromptKind) -> Option<Value> {
    match kind {
        PromptKind::Worker(WorkerKind::PrReview) => Some(json!({
            "type": "object",
            "properties": {
                "verdict": {"type": "string", "enum": ["pass", "fail"],
                            "description": "pass only if every check in the prompt passed"},
                "summary": {"type": "string", "description": "what was checked and, for fail, what must change"},
                "findings": {
                    "type": "array",
                    "description": "one per concrete problem; posted on the pull request as review comments",
                    "items": {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "file, relative to the repository"},
                            "line": {"type": "integer", "minimum": 1},
                            "body": {"type": "string", "description": "what is wrong and what would fix it"}
                        },
                        "required": ["body"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["verdict", "summary"],
            "additionalProperties": false
        })),
        PromptKind::Analyzer => Some(json!({
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": ["for_review", "awaiting_go", "skip"]},
                "priority": {"type": "integer", "minimum": 1, "maximum": 5,
                             "description": "1 = do first, 5 = do last"},
                "complexity": {"type": "string", "enum": ["low", "medium", "high"]},
                "feasibility": {"type": "string", "enum": ["low", "medium", "high"],
                                "description": "how likely an agent finishes this without a human"},
                "summary": {"type": "string"},
                "acceptance_criteria": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "at most 10 short, checkable statements the pull request must meet; \
                                    the review verifies them (empty for skip)"
                }
            },
            "required": ["status", "priority", "complexity", "feasibility", "summary", "acceptance_criteria"],
            "additionalProperties": false
        })),
        // Every property required and no others: what Codex's `--output-schema` (strict) accepts.
        PromptKind::Worker(WorkerKind::FixComments) => Some(json!({
            "type": "object",
            "properties": {
                "summary": {"type": "string", "description": "what was changed, comment by comment"},
                "replies": {
                    "type": "array",
                    "description": "one reply per comment listed in the prompt; executor posts each in its thread",
                    "items": {
                        "type": "object",
                        "properties": {
                            "to": {"type": "string", "description": "the comment's id, as its heading showed it"},
                            "body": {"type": "string",
                                     "description": "begins with [ACKNOWLEDGED: <what was done>]"}
                        },
                        "required": ["to", "body"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["summary", "replies"],
            "additionalProperties": false
        })),
        // Strict like the others: the question is always present, null when the agent has a plan.
        PromptKind::Worker(WorkerKind::Plan) => Some(json!({
            "type": "object",
            "properties": {
                "approach": {"type": "string", "description": "how the task will be done, in a few paragraphs"},
                "files": {"type": "array", "items": {"type": "string"},
                          "description": "the files that will change or be added"},
                "risks": {"type": "string", "description": "what could go wrong or break"},
                "testing": {"type": "string", "description": "how the change will be tested"},
                "question": {"type": ["string", "null"],
                             "description": "null; or, only when no sound plan is possible without a human's \
                                             answer, the one question to ask"}
            },
            "required": ["approach", "files", "risks", "testing", "question"],
            "additionalProperties": false
        })),
        PromptKind::Worker(_) => None,
    }
}

/// Whether a worker of this kind that returns no structured result failed at its job: a review and a
/// triage did; a `fix_comments` worker may have answered through its replies file instead.
pub fn requires_result(kind: PromptKind) -> bool {
    matches!(
        kind,
        PromptKind::Analyzer
            | PromptKind::Worker(WorkerKind::PrReview)
            | PromptKind::Worker(WorkerKind::Plan)
    )
}

/// Turns what the agent returned into the kind's result. `structured` is the agent's structured output
/// when it produced one; otherwise a final message that is itself a JSON object is accepted too.
pub fn parse(
    kind: PromptKind,
    structured: Option<&Value>,
    text: Option<&str>,
) -> Result<ParsedResult, ResultError> {
    let from_text = text.and_then(json_in_text);
    let value = structured.cloned().or(from_text);
    let malformed = |kind, e: serde_json::Error| ResultError::Malformed { kind, reason: e.to_string() };
    match kind {
        PromptKind::Worker(WorkerKind::PrReview) => {
            let v = value.ok_or(ResultError::Missing)?;
            serde_json::from_value(v).map(ParsedResult::Review).map_err(|e| malformed("pr_review", e))
        }
        PromptKind::Analyzer => {
            let v = value.ok_or(ResultError::Missing)?;
            serde_json::from_value(v).map(ParsedResult::Analysis).map_err(|e| malformed("analyzer", e))
        }
        PromptKind::Worker(WorkerKind::Plan) => {
            let v = value.ok_or(ResultError::Missing)?;
            let plan: PlanResult = serde_json::from_value(v).map_err(|e| malformed("plan", e))?;
            if plan.question.as_deref().is_none_or(|q| q.trim().is_empty()) && plan.approach.trim().is_empty()
            {
                return Err(ResultError::Malformed {
                    kind: "plan",
                    reason: "the approach is empty and no question was asked".into(),
                });
            }
            Ok(ParsedResult::Plan(plan))
        }
        PromptKind::Worker(k) => {
            let replies = match value.as_ref().and_then(|v| v.get("replies")) {
                Some(r) if k == WorkerKind::FixComments => serde_json::from_value::<Vec<Reply>>(r.clone())
                    .map_err(|e| malformed("fix_comments", e))?,
                _ => Vec::new(),
            };
            let summary = value
                .as_ref()
                .and_then(|v| v.get("summary"))
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| text.map(|t| t.chars().take(2000).collect()));
            let question = value
                .as_ref()
                .and_then(|v| v.get("question"))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|q| !q.is_empty())
                .map(str::to_string);
            Ok(ParsedResult::Work(WorkSummary { summary, replies, question }))
        }
    }
}

/// A JSON object in a final message: the whole message, or the last ```json fenced block in it.
fn json_in_text(text: &str) -> Option<Value> {
    let whole = text.trim();
    if let Ok(v @ Value::Object(_)) = serde_json::from_str(whole) {
        return Some(v);
    }
    let start = whole.rfind("```json")? + "```json".len();
    let end = whole.get(start..)?.find("```")? + start;
    match serde_json::from_str(whole.get(start..end)?.trim()) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REVIEW: PromptKind = PromptKind::Worker(WorkerKind::PrReview);

    #[test]
    fn review_verdicts_parse_and_bad_ones_are_typed_errors() {
        let ok = parse(REVIEW, Some(&json!({"verdict":"pass","summary":"fine"})), None);
        assert_eq!(
            ok,
            Ok(ParsedResult::Review(ReviewResult {
                verdict: Verdict::Pass,
                summary: "fine".into(),
                findings: vec![]
            }))
        );
        assert_eq!(parse(REVIEW, None, None), Err(ResultError::Missing));
        assert_eq!(parse(REVIEW, None, Some("looks good to me")), Err(ResultError::Missing));
        let bad = parse(REVIEW, Some(&json!({"verdict":"maybe","summary":"?"})), None);
        assert!(matches!(bad, Err(ResultError::Malformed { kind: "pr_review", .. })));
        let from_text =
            parse(REVIEW, None, Some("Done.\n```json\n{\"verdict\":\"fail\",\"summary\":\"no tests\"}\n```"));
        assert!(matches!(from_text, Ok(ParsedResult::Review(ReviewResult { verdict: Verdict::Fail, .. }))));
    }

    #[test]
    fn analyzer_result_parses() {
        let v = json!({"status":"awaiting_go","priority":2,"complexity":"low","feasibility":"high","summary":"s"});
        let Ok(ParsedResult::Analysis(a)) = parse(PromptKind::Analyzer, Some(&v), None) else { panic!() };
        assert_eq!(a.status, AnalysisStatus::AwaitingGo);
        assert_eq!(a.priority, 2);
        assert!(a.acceptance_criteria.is_empty(), "criteria are optional in an answer");
        let bad = json!({"status":"awaiting_go","priority":-1,"complexity":"low","feasibility":"high","summary":"s"});
        assert!(parse(PromptKind::Analyzer, Some(&bad), None).is_err());
        let with = json!({"status":"skip","priority":5,"complexity":"high","feasibility":"low","summary":"s",
                          "acceptance_criteria":["a test covers it"]});
        let Ok(ParsedResult::Analysis(a)) = parse(PromptKind::Analyzer, Some(&with), None) else { panic!() };
        assert_eq!(a.acceptance_criteria, vec!["a test covers it".to_string()]);
    }

    #[test]
    fn plain_work_takes_any_summary() {
        let k = PromptKind::Worker(WorkerKind::Queued);
        assert_eq!(parse(k, None, None), Ok(ParsedResult::Work(WorkSummary::default())));
        let Ok(ParsedResult::Work(w)) = parse(k, None, Some("opened PR")) else { panic!() };
        assert_eq!(w.summary.as_deref(), Some("opened PR"));
    }

    #[test]
    fn fix_comments_replies_come_back_in_the_answer() {
        let k = PromptKind::Worker(WorkerKind::FixComments);
        let text =
            r#"{"summary": "renamed it", "replies": [{"to": "12", "body": "[ACKNOWLEDGED: renamed]"}]}"#;
        let Ok(ParsedResult::Work(w)) = parse(k, None, Some(text)) else { panic!() };
        assert_eq!(w.replies, [Reply { to: "12".into(), body: "[ACKNOWLEDGED: renamed]".into() }]);
        assert_eq!(w.summary.as_deref(), Some("renamed it"));
        let bad = json!({"summary": "s", "replies": [{"to": 12}]});
        assert!(matches!(
            parse(k, Some(&bad), None),
            Err(ResultError::Malformed { kind: "fix_comments", .. })
        ));
        // Another kind's answer never carries replies.
        let other = json!({"summary": "s", "replies": [{"to": "12", "body": "b"}]});
        let Ok(ParsedResult::Work(w)) = parse(PromptKind::Worker(WorkerKind::Queued), Some(&other), None)
        else {
            panic!()
        };
        assert!(w.replies.is_empty());
    }

    #[test]
    fn a_worker_may_ask_a_question_instead_of_guessing() {
        let k = PromptKind::Worker(WorkerKind::Queued);
        let Ok(asked) = parse(k, None, Some(r#"{"question": "  Which API version?  "}"#)) else { panic!() };
        assert_eq!(asked.question(), Some("Which API version?"));
        let Ok(blank) = parse(k, None, Some(r#"{"question": " ", "summary": "done"}"#)) else { panic!() };
        assert_eq!(blank.question(), None, "a blank question is none");
        let plan = PromptKind::Worker(WorkerKind::Plan);
        let q = json!({"approach": "", "files": [], "risks": "", "testing": "", "question": "v1 or v2?"});
        assert_eq!(parse(plan, Some(&q), None).unwrap().question(), Some("v1 or v2?"));
    }

    #[test]
    fn a_plan_parses_renders_and_must_say_something() {
        let plan = PromptKind::Worker(WorkerKind::Plan);
        let v = json!({"approach": "Add a flag.", "files": ["src/a.rs"], "risks": "none", "testing": "a unit test",
                       "question": null});
        let Ok(ParsedResult::Plan(p)) = parse(plan, Some(&v), None) else { panic!() };
        let md = p.to_markdown();
        assert!(md.contains("### Approach\n\nAdd a flag.") && md.contains("- src/a.rs"), "{md}");
        assert!(md.contains("### How it will be tested\n\na unit test"), "{md}");
        let empty = json!({"approach": " ", "files": [], "risks": "", "testing": "", "question": null});
        assert!(matches!(parse(plan, Some(&empty), None), Err(ResultError::Malformed { kind: "plan", .. })));
        assert_eq!(parse(plan, None, Some("I would add a flag")), Err(ResultError::Missing));
    }

    #[test]
    fn schemas_exist_for_kinds_that_answer_in_json() {
        for k in PromptKind::ALL {
            let expect = matches!(
                k,
                PromptKind::Analyzer
                    | PromptKind::Worker(WorkerKind::PrReview)
                    | PromptKind::Worker(WorkerKind::FixComments)
                    | PromptKind::Worker(WorkerKind::Plan)
            );
            assert_eq!(schema(k).is_some(), expect, "{k}");
            assert_eq!(requires_result(k), expect && k != PromptKind::Worker(WorkerKind::FixComments), "{k}");
        }
    }
}
