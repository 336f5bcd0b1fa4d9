//! How an intake merges into a task: pure, so every rule is tested without a database.

use chrono::{DateTime, Utc};

use super::{NewTask, Upserted};
use crate::domain::{QueueStatus, Task};

/// What an upsert writes: the row's tracker-owned fields after it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Planned {
    pub(super) outcome: Upserted,
    pub(super) source: Option<String>,
    pub(super) description: Option<String>,
    pub(super) notes: Option<String>,
    pub(super) repo: Option<String>,
    pub(super) priority: Option<i32>,
    pub(super) revision_description: Option<String>,
    pub(super) revision_notes: Option<String>,
    pub(super) revision_at: Option<DateTime<Utc>>,
    pub(super) facts: Facts,
    pub(super) reason: Option<&'static str>,
}

/// What the tracker says besides the text (for the filters). Refreshed by every intake that gives it,
/// whatever the task's status: it never changes what a human approved.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Facts {
    pub(super) url: Option<String>,
    pub(super) completed: Option<bool>,
    pub(super) assignee: Option<String>,
    pub(super) modified_at: Option<DateTime<Utc>>,
    pub(super) raw_json: Option<String>,
}

impl Facts {
    fn given(t: &NewTask) -> Facts {
        Facts {
            url: t.url.clone(),
            completed: t.completed,
            assignee: t.assignee.clone(),
            modified_at: t.modified_at,
            raw_json: t.raw.as_ref().map(|v| v.to_string()),
        }
    }

    fn of(task: &Task) -> Facts {
        Facts {
            url: task.url.clone(),
            completed: task.completed,
            assignee: task.assignee.clone(),
            modified_at: task.source_modified_at,
            raw_json: task.raw_json.clone(),
        }
    }

    /// The given facts over the old ones. A source that gives a raw object gives all it knows, so an
    /// assignee it leaves out was removed; a caller without one (`queue add`) only sets what it names.
    fn over(self, old: Facts) -> Facts {
        if self.raw_json.is_some() {
            return self;
        }
        Facts {
            url: self.url.or(old.url),
            completed: self.completed.or(old.completed),
            assignee: self.assignee.or(old.assignee),
            modified_at: self.modified_at.or(old.modified_at),
            raw_json: old.raw_json,
        }
    }
}

/// Merges an intake into the task as it is (`None`: a new task). A field not given is kept. Before
/// approval new text simply replaces the old; from approval on, the text a human approved stays, and a
/// differing text becomes (or updates) the pending revision.
pub(super) fn plan(old: Option<&Task>, t: &NewTask, at: DateTime<Utc>) -> Planned {
    let Some(old) = old else {
        return Planned {
            outcome: Upserted::Added,
            source: t.source.clone(),
            description: t.description.clone(),
            notes: t.notes.clone(),
            repo: t.repo.clone(),
            priority: t.priority,
            revision_description: None,
            revision_notes: None,
            revision_at: None,
            facts: Facts::given(t),
            reason: None,
        };
    };
    let keep = |new: &Option<String>, old: &Option<String>| new.clone().or_else(|| old.clone());
    let approved = matches!(old.status, QueueStatus::Approved | QueueStatus::Done);
    // A revision field holds only text that differs from the approved one; the tracker sending the
    // approved text again withdraws that part of the revision.
    let revise = |new: &Option<String>, approved_text: &Option<String>, pending: &Option<String>| match new {
        Some(n) if Some(n) != approved_text.as_ref() => Some(n.clone()),
        Some(_) => None,
        None => pending.clone(),
    };
    let (description, notes, revision_description, revision_notes) = if approved {
        (
            old.description.clone(),
            old.notes.clone(),
            revise(&t.description, &old.description, &old.revision_description),
            revise(&t.notes, &old.notes, &old.revision_notes),
        )
    } else {
        (keep(&t.description, &old.description), keep(&t.notes, &old.notes), None, None)
    };
    let revision_changed =
        (&revision_description, &revision_notes) != (&old.revision_description, &old.revision_notes);
    let revision_at = match (&revision_description, &revision_notes) {
        (None, None) => None,
        _ if revision_changed => Some(at),
        _ => old.revision_at,
    };
    let mut planned = Planned {
        outcome: Upserted::Updated,
        source: keep(&t.source, &old.source),
        description,
        notes,
        repo: keep(&t.repo, &old.repo),
        priority: t.priority.or(old.priority),
        revision_description,
        revision_notes,
        revision_at,
        facts: Facts::given(t).over(Facts::of(old)),
        reason: None,
    };
    let unchanged = (&planned.source, &planned.description, &planned.notes, &planned.repo, planned.priority)
        == (&old.source, &old.description, &old.notes, &old.repo, old.priority)
        && planned.facts == Facts::of(old)
        && !revision_changed;
    if unchanged {
        planned.outcome = Upserted::Unchanged;
    } else if revision_changed {
        planned.outcome = Upserted::Revised;
        planned.reason = Some(if planned.revision_at.is_some() {
            "revision received; approved text kept"
        } else {
            "revision withdrawn: the tracker sent the approved text again"
        });
    }
    planned
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(status: QueueStatus) -> Task {
        Task {
            source: Some("inbox".into()),
            description: Some("approved".into()),
            priority: Some(2),
            ..Task::for_test("1", status)
        }
    }

    fn new(description: &str) -> NewTask {
        NewTask { description: Some(description.into()), ..Default::default() }
    }

    #[test]
    fn before_approval_new_text_replaces_the_old() {
        let at = chrono::Utc::now();
        for status in
            [QueueStatus::Pending, QueueStatus::ForReview, QueueStatus::AwaitingGo, QueueStatus::Skip]
        {
            let p = plan(Some(&task(status)), &new("other"), at);
            assert_eq!(
                (p.outcome, p.description.as_deref(), p.revision_at),
                (Upserted::Updated, Some("other"), None)
            );
        }
    }

    #[test]
    fn from_approval_on_new_text_is_a_revision() {
        let at = chrono::Utc::now();
        for status in [QueueStatus::Approved, QueueStatus::Done] {
            let old = task(status);
            let p = plan(Some(&old), &new("other"), at);
            assert_eq!((p.outcome, p.description.as_deref()), (Upserted::Revised, Some("approved")));
            assert_eq!((p.revision_description.as_deref(), p.revision_at), (Some("other"), Some(at)));
            assert_eq!(p.reason, Some("revision received; approved text kept"));
            // The approved text again, and other fields only: no revision.
            assert_eq!(plan(Some(&old), &new("approved"), at).outcome, Upserted::Unchanged);
            let prio = NewTask { priority: Some(1), ..Default::default() };
            let p = plan(Some(&old), &prio, at);
            assert_eq!((p.outcome, p.priority, p.revision_at), (Upserted::Updated, Some(1), None));
        }
    }

    #[test]
    fn a_pending_revision_is_kept_updated_or_withdrawn() {
        let (then, at) = (chrono::Utc::now() - chrono::Duration::hours(1), chrono::Utc::now());
        let old = Task {
            revision_description: Some("other".into()),
            revision_at: Some(then),
            ..task(QueueStatus::Approved)
        };
        let same = plan(Some(&old), &new("other"), at);
        assert_eq!((same.outcome, same.revision_at), (Upserted::Unchanged, Some(then)));
        let notes = plan(Some(&old), &NewTask { notes: Some("n".into()), ..Default::default() }, at);
        assert_eq!(
            (notes.revision_description.as_deref(), notes.revision_notes.as_deref()),
            (Some("other"), Some("n"))
        );
        assert_eq!((notes.outcome, notes.revision_at), (Upserted::Revised, Some(at)));
        let back = plan(Some(&old), &new("approved"), at);
        assert_eq!(
            (back.outcome, back.revision_description, back.revision_at),
            (Upserted::Revised, None, None)
        );
        assert!(back.reason.unwrap().starts_with("revision withdrawn"));
    }
}
