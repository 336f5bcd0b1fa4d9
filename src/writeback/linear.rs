//! Linear: each message is a comment on the issue (`commentCreate`), and, when the source names one
//! for the event (`writeback_states`), the issue is moved to that workflow state of its team
//! (`issueUpdate` with the state's id, looked up by name in the issue's team).
//!
//! A comment is created with an id executor chooses — a UUID derived from the message's marker — so a
//! retry asks Linear for that comment (`comment(id:)`) before it posts: a write that went through
//! before a timeout or a crash is found, never doubled. The text also ends with the marker, as on
//! Asana. The move is idempotent and is done again on a retry.

use std::collections::BTreeMap;

use ring::digest;
use serde_json::{Value, json};

use super::message::marker_text;
use super::{Posted, TrackerError};
use crate::config::SourceConfig;
use crate::domain::WritebackEvent;
use crate::linear::{LinearClient, LinearError, documents, issue_id};
use crate::store::Writeback;

/// Writes comments on, and moves, the issues of one Linear source.
pub struct LinearTracker {
    client: LinearClient,
    source: String,
    /// The workflow state (by name) an issue moves to at each event.
    states: BTreeMap<WritebackEvent, String>,
    teams: Vec<String>,
}

impl LinearTracker {
    /// The tracker of `source`, with the value of its `token_env` (if set).
    pub fn new(source: &SourceConfig, key: Option<String>) -> Result<LinearTracker, TrackerError> {
        let client =
            LinearClient::new(&source.api_url, &source.token_env, key, source.writeback_timeout.std())
                .map_err(|e| refused_or_passing(e, &source.name))?;
        Ok(LinearTracker {
            client,
            source: source.name.clone(),
            states: source.writeback_states.clone(),
            teams: source.teams.clone(),
        })
    }

    /// Posts `w` as a comment on its issue unless an earlier attempt did, then moves the issue to the
    /// event's state if the source names one.
    pub async fn post(&self, w: &Writeback) -> Result<Posted, TrackerError> {
        let Some(issue) = issue_id(&w.task_gid) else {
            return Err(TrackerError::Refused {
                why: format!("task {} is not a Linear issue", w.task_gid),
                fix: "only tasks the Linear intake brought in can be written back".into(),
            });
        };
        let id = comment_id(&w.marker);
        let earlier = match w.attempts > 1 {
            true => self.find(&id).await?,
            false => None,
        };
        let posted = match earlier {
            Some(found) => Posted::Earlier(found),
            None => self.comment(issue, &id, w).await?,
        };
        if let Some(state) = self.states.get(&w.event) {
            self.move_to(issue, state).await?;
        }
        Ok(posted)
    }

    async fn run(&self, document: &str, variables: Value) -> Result<Value, TrackerError> {
        // No waiting here: the outbox's back-off retries a rate-limited message later.
        self.client.run(document, variables, 0).await.map_err(|e| refused_or_passing(e, &self.source))
    }

    /// The comment with `id`, if an earlier attempt created it.
    async fn find(&self, id: &str) -> Result<Option<String>, TrackerError> {
        match self.client.run(documents::COMMENT, json!({"id": id}), 0).await {
            Ok(data) => Ok(data.pointer("/comment/id").and_then(Value::as_str).map(str::to_string)),
            Err(LinearError::NotFound { .. }) => Ok(None),
            Err(e) => Err(refused_or_passing(e, &self.source)),
        }
    }

    async fn comment(&self, issue: &str, id: &str, w: &Writeback) -> Result<Posted, TrackerError> {
        let body = format!("{}\n\n{}", w.message, marker_text(&w.marker));
        let data =
            self.run(documents::COMMENT_CREATE, json!({"id": id, "issueId": issue, "body": body})).await?;
        match data.pointer("/commentCreate/comment/id").and_then(Value::as_str) {
            Some(created) => Ok(Posted::Now(created.to_string())),
            // Linear took it but its answer lacks the id: the next attempt finds it by its id.
            None => Err(TrackerError::Passing("Linear's commentCreate answer has no comment.id".into())),
        }
    }

    /// Moves the issue to its team's workflow state named `state` (unless it is there already).
    async fn move_to(&self, issue: &str, state: &str) -> Result<(), TrackerError> {
        let data = self.run(documents::ISSUE_TEAM_STATES, json!({"id": issue, "name": state})).await?;
        let current = data.pointer("/issue/state/name").and_then(Value::as_str);
        if current.is_some_and(|name| name.eq_ignore_ascii_case(state)) {
            return Ok(());
        }
        let nodes =
            data.pointer("/issue/team/states/nodes").and_then(Value::as_array).cloned().unwrap_or_default();
        let found = nodes
            .iter()
            .find(|n| n.get("name").and_then(Value::as_str).is_some_and(|n| n.eq_ignore_ascii_case(state)));
        let Some(state_id) = found.and_then(|n| n.get("id")).and_then(Value::as_str) else {
            let team = data.pointer("/issue/team/key").and_then(Value::as_str).unwrap_or("?");
            return Err(TrackerError::Refused {
                why: format!("team {team} has no workflow state named {state:?}"),
                fix: format!(
                    "name one of team {team}'s states in writeback_states of source {:?}",
                    self.source
                ),
            });
        };
        let data = self.run(documents::ISSUE_UPDATE, json!({"id": issue, "stateId": state_id})).await?;
        match data.pointer("/issueUpdate/success").and_then(Value::as_bool) {
            Some(true) => Ok(()),
            _ => Err(TrackerError::Passing(format!("Linear did not move the issue to {state:?}"))),
        }
    }

    /// Whether the key would serve write-back, found out without writing: whose key it is, that each
    /// configured team exists, and that each team has the states `writeback_states` names. (Linear
    /// tells no key's write permission without a write: a read-only key is told at its first message.)
    pub async fn probe(&self) -> Result<String, TrackerError> {
        let data = self.run(documents::PROBE, json!({"teams": self.teams})).await?;
        let viewer = ["/viewer/name", "/viewer/email"]
            .iter()
            .find_map(|p| data.pointer(p).and_then(Value::as_str).filter(|s| !s.is_empty()))
            .unwrap_or("the key's user")
            .to_string();
        let teams = data.pointer("/teams/nodes").and_then(Value::as_array).cloned().unwrap_or_default();
        let key_of = |t: &Value| t.get("key").and_then(Value::as_str).unwrap_or_default().to_string();
        for wanted in &self.teams {
            let Some(team) = teams.iter().find(|t| key_of(t).eq_ignore_ascii_case(wanted)) else {
                return Err(TrackerError::Refused {
                    why: format!("{viewer}'s key sees no team with key {wanted:?}"),
                    fix: format!(
                        "check teams of source {:?}, or use a key of a member of that team",
                        self.source
                    ),
                });
            };
            let names: Vec<&str> = team
                .pointer("/states/nodes")
                .and_then(Value::as_array)
                .map(|n| n.iter().filter_map(|s| s.get("name").and_then(Value::as_str)).collect())
                .unwrap_or_default();
            if let Some((event, state)) =
                self.states.iter().find(|(_, s)| !names.iter().any(|n| n.eq_ignore_ascii_case(s)))
            {
                return Err(TrackerError::Refused {
                    why: format!("team {wanted} has no workflow state {state:?} (for {event})"),
                    fix: format!("name one of {} in writeback_states", names.join(", ")),
                });
            }
        }
        Ok(format!(
            "{viewer}'s key reads {}; whether it may comment is known at the first message (Linear tells \
             it only by a write)",
            if self.teams.is_empty() {
                "Linear".to_string()
            } else {
                format!("team {}", self.teams.join(", "))
            }
        ))
    }
}

/// The id of the comment carrying the message with `marker`: a version-4-shaped UUID from a SHA-256
/// of the marker, the same at every attempt, unique as the marker is.
pub fn comment_id(marker: &str) -> String {
    let hash = digest::digest(&digest::SHA256, format!("executor write-back {marker}").as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&hash.as_ref()[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// A refusal for good (the key, its rights, the issue) or a passing fault.
fn refused_or_passing(e: LinearError, source: &str) -> TrackerError {
    let why = e.to_string();
    let fix = match &e {
        _ if e.is_passing() => return TrackerError::Passing(why),
        LinearError::MissingKey { variable } => {
            return TrackerError::Passing(format!(
                "the Linear API key variable {variable} is not set in the runner's environment"
            ));
        }
        LinearError::Malformed { .. } => return TrackerError::Passing(why),
        LinearError::Unauthenticated { variable, .. } | LinearError::BadKey { variable } => {
            format!("create a new personal API key in Linear and export it as {variable}")
        }
        LinearError::Forbidden { .. } => format!(
            "use a key with write access to the issue's team (a member's, not read-only), or set \
             writeback = [] on source {source:?}"
        ),
        LinearError::NotFound { .. } => {
            "the issue was deleted or moved out of the key's reach; nothing more is sent about it".into()
        }
        _ => "Linear refused the request itself; please report this as a bug in executor".into(),
    };
    TrackerError::Refused { why, fix }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_id_is_a_stable_uuid_per_marker() {
        let id = comment_id("wb-0011223344556677");
        assert_eq!(id, comment_id("wb-0011223344556677"));
        assert_ne!(id, comment_id("wb-0011223344556678"));
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4", "version 4: {id}");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"), "variant: {id}");
    }
}
