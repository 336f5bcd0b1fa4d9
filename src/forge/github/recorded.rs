//! Which comments of a pull request are executor's (its notices, reviews and agents' replies), by what
//! executor knows now rather than when the view of the pull request was taken.

use super::AgentComments;
use crate::forge::{PrSnapshot, carries_executor_marker};

/// Marks executor's comments in a view of the pull request by what executor knows now, which may be more
/// than when the view was taken: a comment recorded since (a reply or review found on the pull request
/// after GitHub lost its answer) is an agent's, and so is one that carries executor's own marker (a
/// notice or review that landed after a timeout, or twice), whatever id was recorded for it. A marked
/// acknowledgement stays as its author's: it would silence the comment it answers, and a stranger can
/// type a marker.
pub fn mark_executors(snapshot: &mut PrSnapshot, agent: &AgentComments) {
    for c in &mut snapshot.comments {
        match agent.get(&c.id) {
            Some(answered) => {
                c.by_agent = true;
                if c.thread_id.is_none() && c.in_reply_to.is_none() {
                    c.in_reply_to.clone_from(answered);
                }
            }
            None if carries_executor_marker(&c.body) && !c.is_acknowledgement() => {
                c.by_agent = true;
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::Comment;

    fn comment(id: &str, body: &str, thread: Option<&str>) -> Comment {
        Comment {
            id: id.into(),
            author: "alex".into(),
            body: body.into(),
            created_at: "2026-12-03T12:00:00Z".parse().unwrap(),
            path: None,
            line: None,
            thread_id: thread.map(str::to_string),
            thread_resolved: false,
            in_reply_to: None,
            by_agent: false,
            from_dashboard: false,
            author_association: Some("OWNER".into()),
        }
    }

    fn view(comments: Vec<Comment>) -> PrSnapshot {
        PrSnapshot {
            number: 1,
            url: String::new(),
            state: crate::forge::PrState::Open,
            draft: true,
            head_sha: "abc".into(),
            labels: Vec::new(),
            mergeable: crate::forge::Mergeable::Mergeable,
            checks: Vec::new(),
            comments,
            observed_at: "2026-12-03T12:00:01Z".parse().unwrap(),
            diff: None,
        }
    }

    #[test]
    fn recorded_and_marked_comments_are_executors_whatever_the_view_said() {
        let mut pr = view(vec![
            comment("IC_1", "Please add a test.", None),
            comment("IC_2", "[ACKNOWLEDGED: done] added", None),
            comment("IC_3", "@alex The run is complete.\n\n<!-- executor notice 7 -->", None),
            comment("IC_4", "[ACKNOWLEDGED: typed by anyone] <!-- executor notice 7 -->", None),
            comment("IC_5", "Looks off.\n\n<!-- executor review 3 -->", Some("T1")),
        ]);
        let agent: AgentComments = [("IC_2".to_string(), Some("IC_1".to_string()))].into_iter().collect();
        mark_executors(&mut pr, &agent);
        let by_agent: Vec<bool> = pr.comments.iter().map(|c| c.by_agent).collect();
        // A marked acknowledgement is not taken for executor's: it would silence the comment it answers.
        assert_eq!(by_agent, [false, true, true, false, true]);
        assert_eq!(pr.comments[1].in_reply_to.as_deref(), Some("IC_1"), "what the recorded reply answers");
    }
}
