//! The soak's two seams, so that one soak drives either pair of fakes: the forge (`Forge`: GitHub or
//! GitLab, where the pull requests, CI and executor's comments are) and the tracker (`Tracker`: Asana or
//! Jira, where tasks arrive and executor writes back). The world, the traffic, the chaos and the verdict
//! speak only these; each implementation is a file of its own (`side_github.rs`, `side_gitlab.rs`,
//! `side_asana.rs`, `side_jira.rs`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::rng::Rng;

/// A pull request (GitHub) or merge request (GitLab) as the soak sees it.
#[derive(Debug, Clone)]
pub struct Pr {
    /// The number executor records (`pr_number`): GitHub's number, GitLab's iid.
    pub number: i64,
    pub branch: String,
    pub state: PrState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrState {
    Open,
    Merged,
    Closed,
}

impl PrState {
    /// From the forge's word, any case (GitHub's `MERGED`, GitLab's `merged`); anything else is open.
    pub fn of(word: &str) -> PrState {
        match word.to_ascii_lowercase().as_str() {
            "merged" => PrState::Merged,
            "closed" => PrState::Closed,
            _ => PrState::Open,
        }
    }
}

/// Who comments on a pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Person {
    /// alex, in `trusted_authors`: their comment makes a worker act.
    Trusted,
    /// A stranger, whose comment must never reach a prompt.
    Stranger,
}

/// One request for CI the forge received (a workflow dispatched, a pipeline started), to be answered.
#[derive(Debug, Clone)]
pub struct CiAsk {
    /// The branch it is for.
    pub branch: String,
    /// What answers it: the forge's own handle (a pipeline's job id on GitLab; unused on GitHub).
    pub id: i64,
}

/// Something executor wrote on the forge, for finding what it wrote twice.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Posted {
    /// How it was written (`IssueComment`, `discussion_note_create`, …).
    pub kind: String,
    pub number: i64,
    /// The thread or discussion it answered, if any.
    pub reply_to: Option<String>,
    pub body: String,
}

/// The configuration of one side: its section of `executor.toml` and its secrets' variables.
pub struct SideConfig {
    /// TOML at the top level of the config (`[github]`, `[[sources]]`, …).
    pub toml: String,
    /// Keys of `[repos.app]` (the forge's only).
    pub repo_keys: String,
    /// The variables every executor process gets (the tokens).
    pub env: Vec<(String, String)>,
}

pub trait Forge: Send + Sync {
    /// "GitHub", "GitLab".
    fn name(&self) -> &'static str;
    fn config(&self) -> SideConfig;
    fn comment(&self, number: i64, who: Person, body: &str);
    fn close(&self, number: i64);
    fn merge(&self, number: i64);
    fn prs(&self) -> Vec<Pr>;
    /// CI asked for since the last call.
    fn ci_asked(&self) -> Vec<CiAsk>;
    /// Answers `ask` at the branch's head, passing or failing; why not, when it cannot.
    fn ci_answer(&self, ask: &CiAsk, passed: bool) -> Result<(), &'static str>;
    /// Makes the next push start no CI, where a push starts it (GitLab); whether it did.
    fn ci_skip_next_push(&self) -> bool;
    /// Requests served so far (every kind).
    fn request_count(&self) -> usize;
    /// Serves one fault, drawn from every kind the fake has, on the next request.
    fn inject_fault(&self, rng: &mut Rng);
    /// The rate-limit window is used up until `reset`.
    fn empty_window(&self, reset: DateTime<Utc>);
    /// The rate-limit window is whole again.
    fn refill_window(&self);
    /// Faults served so far, by kind.
    fn faults_served(&self) -> BTreeMap<String, u64>;
    /// The requests for the progress line (`12 REST, 3 GraphQL`).
    fn progress(&self) -> String;
    /// The report's lines about the requests, over `hours`; and the same as JSON.
    fn report(&self, hours: f64) -> (String, serde_json::Value);
    /// Every comment, note, reply and review executor posted.
    fn posted(&self) -> Vec<Posted>;
}

/// How a task already in the tracker changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Its text grows.
    Edited,
    /// Done in the tracker.
    Completed,
    /// Someone else's now.
    Reassigned,
}

pub trait Tracker: Send + Sync {
    /// "Asana", "Jira".
    fn name(&self) -> &'static str;
    fn config(&self) -> SideConfig;
    /// Task `n` (1, 2, …) arrives with this name and text.
    fn arrive(&self, n: u64, name: &str, notes: &str);
    fn change(&self, n: u64, change: Change);
    /// The comments executor wrote on the task executor knows as `gid`, in order.
    fn comments(&self, gid: &str) -> Vec<String>;
    /// Requests served so far.
    fn request_count(&self) -> usize;
    /// Serves a read fault on the next request; its name for the report.
    fn read_fault(&self, rng: &mut Rng) -> &'static str;
    /// The next comment executor writes is carried out and answered 502; its name for the report.
    fn write_fault(&self) -> &'static str;
}
