use std::fmt;

use crate::domain::WorkerKind;

/// What an agent process is run for: one of the seven worker kinds, or the analyzer's triage. It picks the
/// prompt template, the structured result and the work log's file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PromptKind {
    Worker(WorkerKind),
    Analyzer,
}

impl PromptKind {
    pub const ALL: [PromptKind; 8] = [
        PromptKind::Worker(WorkerKind::Queued),
        PromptKind::Worker(WorkerKind::InProgress),
        PromptKind::Worker(WorkerKind::FixCi),
        PromptKind::Worker(WorkerKind::FixComments),
        PromptKind::Worker(WorkerKind::PrReview),
        PromptKind::Worker(WorkerKind::FixConflicts),
        PromptKind::Worker(WorkerKind::Plan),
        PromptKind::Analyzer,
    ];

    /// `queued`, `in_progress`, `fix_ci`, `fix_comments`, `pr_review` or `analyzer`.
    pub fn as_str(self) -> &'static str {
        match self {
            PromptKind::Worker(k) => k.as_str(),
            PromptKind::Analyzer => "analyzer",
        }
    }

    /// The template file name, `<kind>.md`.
    pub fn template_name(self) -> String {
        format!("{}.md", self.as_str())
    }
}

impl From<WorkerKind> for PromptKind {
    fn from(k: WorkerKind) -> Self {
        PromptKind::Worker(k)
    }
}

impl std::str::FromStr for PromptKind {
    type Err = crate::domain::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PromptKind::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| crate::domain::UnknownName {
            what: "kind",
            value: s.to_string(),
            expected: PromptKind::ALL.map(PromptKind::as_str).join(", "),
        })
    }
}

impl fmt::Display for PromptKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
