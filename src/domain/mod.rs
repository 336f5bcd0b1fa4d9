//! The vocabulary of executor: tasks, runs, their states and the legal moves between them.
//!
//! Architecture invariant: nothing in `domain` does I/O. Every other module depends on this one and it
//! depends on no other module of the crate.

mod budget_cap;
mod change_words;
mod ci_trigger;
mod gid;
mod notice;
mod person;
mod plan;
mod queue;
mod run;
mod text;
mod webhook;
mod worker_end;
mod worker_kind;
mod writeback;

pub use budget_cap::{BudgetCap, next_budget_day};
pub use change_words::ChangeWords;
pub use ci_trigger::CiTrigger;
pub use gid::{GidError, TaskGid};
pub use notice::{ABANDONED_NOTICE_KIND, CHECKS_TIMEOUT_KEY, checks_timeout_key};
pub use person::{By, PERSON_NAME_RULE, Role, valid_person_name};
pub use plan::{AnswerVia, PlanMode, PlanStatus};
pub use queue::{QueueStatus, SkippedBy, Task};
pub use run::{Run, RunState};
pub use text::{SHOWN_TEXT_BYTES, shown};
pub use webhook::{DeliveryOutcome, WakeScope, WebhookSender};
pub use worker_end::{EndClass, EndReason, ReviewVerdict, RunnerEnd};
pub use worker_kind::WorkerKind;
pub use writeback::{WritebackEvent, WritebackStatus};

use std::fmt;

/// Who made a change. Recorded on every event so the audit trail says who did what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    Cli,
    Analyzer,
    Runner,
    Web,
    Worker,
}

impl Actor {
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::Cli => "cli",
            Actor::Analyzer => "analyzer",
            Actor::Runner => "runner",
            Actor::Web => "web",
            Actor::Worker => "worker",
        }
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A state change that the state machine does not allow. The message lists what *is* allowed, so the
/// person reading it knows the next legal step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} cannot go from {from} to {to}; from {from} it can go to: {allowed}")]
pub struct IllegalTransition {
    pub what: &'static str,
    pub from: String,
    pub to: String,
    pub allowed: String,
}

/// A value read from the database or the command line that names no known state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} '{value}'; expected one of: {expected}")]
pub struct UnknownName {
    pub what: &'static str,
    pub value: String,
    pub expected: String,
}

/// Shared by the state enums: a stable lowercase name used in the database, the CLI and JSON.
macro_rules! named_enum {
    ($ty:ident, $what:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $name),+ }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = $crate::domain::UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok($ty::$variant),)+
                    _ => Err($crate::domain::UnknownName {
                        what: $what,
                        value: s.to_string(),
                        expected: [$($name),+].join(", "),
                    }),
                }
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use named_enum;

/// Builds the error for a refused move, listing the legal targets.
pub(crate) fn illegal<T: fmt::Display + Copy>(
    what: &'static str,
    from: T,
    to: T,
    allowed: impl Iterator<Item = T>,
) -> IllegalTransition {
    let allowed: Vec<String> = allowed.map(|s| s.to_string()).collect();
    IllegalTransition {
        what,
        from: from.to_string(),
        to: to.to_string(),
        allowed: if allowed.is_empty() { "nothing (final)".into() } else { allowed.join(", ") },
    }
}
