//! From an agent's answer to a triage the store takes: the range checks the schema states but serde
//! cannot (a priority of 0 or 9), and bounds on what an agent may write into the queue. Pure.

use crate::domain::QueueStatus;
use crate::store::Triage;
use crate::worker::result::{AnalysisResult, AnalysisStatus, Level};

/// Priorities an answer may give: 1 (do first) to 5 (do last).
pub const PRIORITY_RANGE: std::ops::RangeInclusive<u8> = 1..=5;
/// At most this many acceptance criteria are kept; the rest are dropped.
pub const MAX_CRITERIA: usize = 10;
/// A criterion longer than this (in characters) is cut, marked with `…`.
pub const MAX_CRITERION_CHARS: usize = 300;
/// A summary longer than this (in characters) is cut, marked with `…`.
pub const MAX_SUMMARY_CHARS: usize = 4000;

/// What the analyzer schema asks for, in words: part of the error recorded when no answer was usable.
pub const EXPECTED: &str = "one JSON object matching the analyzer schema: status (for_review, awaiting_go or \
                            skip), priority (an integer from 1 to 5), complexity and feasibility (low, medium \
                            or high), summary (text), acceptance_criteria (a list of short statements)";

/// The triage an answer stands for, or why it cannot be used (said to the agent on its second try).
/// Criteria are trimmed, empty ones dropped, each and their number bounded; so is the summary.
pub fn to_triage(a: AnalysisResult) -> Result<Triage, String> {
    if !PRIORITY_RANGE.contains(&a.priority) {
        return Err(format!(
            "priority {} is out of range: it must be an integer from {} (do first) to {} (do last)",
            a.priority,
            PRIORITY_RANGE.start(),
            PRIORITY_RANGE.end()
        ));
    }
    let summary = a.summary.trim();
    if summary.is_empty() {
        return Err("the summary is empty: say in two to four sentences what the task asks and why".into());
    }
    let acceptance_criteria = a
        .acceptance_criteria
        .iter()
        .map(|c| c.trim())
        .filter(|c| !c.is_empty())
        .take(MAX_CRITERIA)
        .map(|c| bounded(c, MAX_CRITERION_CHARS))
        .collect();
    Ok(Triage {
        status: match a.status {
            AnalysisStatus::ForReview => QueueStatus::ForReview,
            AnalysisStatus::AwaitingGo => QueueStatus::AwaitingGo,
            AnalysisStatus::Skip => QueueStatus::Skip,
        },
        priority: i32::from(a.priority),
        complexity: level(a.complexity).into(),
        feasibility: level(a.feasibility).into(),
        summary: bounded(summary, MAX_SUMMARY_CHARS),
        acceptance_criteria,
    })
}

fn level(l: Level) -> &'static str {
    match l {
        Level::Low => "low",
        Level::Medium => "medium",
        Level::High => "high",
    }
}

/// `text` cut to at most `max` characters, the cut marked with `…`.
pub fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some(_) => {
            let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
            out.push('…');
            out
        }
    }
}

/// `text` cut to at most `max_bytes` (at a character boundary), saying how much was left out: for a
/// task text too long to put in a prompt whole (a 1 MB description).
pub fn for_prompt(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let mut cut = max_bytes;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}\n[… {} more bytes not shown]", &text[..cut], text.len() - cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(priority: u8, criteria: Vec<String>) -> AnalysisResult {
        AnalysisResult {
            status: AnalysisStatus::AwaitingGo,
            priority,
            complexity: Level::Low,
            feasibility: Level::High,
            summary: "  Add a flag.  ".into(),
            acceptance_criteria: criteria,
        }
    }

    #[test]
    fn a_good_answer_maps_to_the_store_triage() {
        let t = to_triage(answer(2, vec![" a test covers it ".into(), "  ".into()])).unwrap();
        assert_eq!(t.status, QueueStatus::AwaitingGo);
        assert_eq!((t.priority, t.complexity.as_str(), t.feasibility.as_str()), (2, "low", "high"));
        assert_eq!(t.summary, "Add a flag.");
        assert_eq!(t.acceptance_criteria, vec!["a test covers it".to_string()]);
    }

    #[test]
    fn priorities_outside_one_to_five_are_refused() {
        for p in [0, 6, 9, 255] {
            let e = to_triage(answer(p, vec![])).unwrap_err();
            assert!(e.contains(&format!("priority {p}")) && e.contains("1") && e.contains("5"), "{e}");
        }
        assert!(to_triage(answer(1, vec![])).is_ok() && to_triage(answer(5, vec![])).is_ok());
    }

    #[test]
    fn an_empty_summary_is_refused() {
        let mut a = answer(3, vec![]);
        a.summary = " \n ".into();
        assert!(to_triage(a).unwrap_err().contains("summary"));
    }

    #[test]
    fn criteria_and_summary_are_bounded() {
        let many: Vec<String> = (0..50).map(|i| format!("criterion {i}")).collect();
        let mut a = answer(3, many);
        a.acceptance_criteria[0] = "é".repeat(5000);
        a.summary = "s".repeat(100_000);
        let t = to_triage(a).unwrap();
        assert_eq!(t.acceptance_criteria.len(), MAX_CRITERIA);
        assert_eq!(t.acceptance_criteria[0].chars().count(), MAX_CRITERION_CHARS);
        assert!(t.acceptance_criteria[0].ends_with('…'));
        assert_eq!(t.acceptance_criteria[9], "criterion 9");
        assert_eq!(t.summary.chars().count(), MAX_SUMMARY_CHARS);
    }

    #[test]
    fn long_task_text_is_cut_for_the_prompt_at_a_character() {
        assert_eq!(for_prompt("short", 10), "short");
        let long = "é".repeat(1000); // 2000 bytes
        let cut = for_prompt(&long, 1001);
        assert!(cut.starts_with(&"é".repeat(500)) && cut.ends_with("[… 1000 more bytes not shown]"), "{cut}");
    }
}
