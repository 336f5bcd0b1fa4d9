//! The comments a person posted on a run's pull request from the dashboard. This record, and nothing
//! in the comment, is what makes such a comment a trusted human's: on GitHub it is posted with
//! executor's own token, and its signature ("alice (via executor): …") is text anyone could type.

use std::collections::HashMap;

use super::{Result, Store, now, on_pool};

/// Comment ids the dashboard posted, each with the person who wrote it.
pub type PersonComments = HashMap<String, String>;

impl Store {
    /// Records that `comment_id` on the run's pull request was written by `person` on the dashboard.
    /// Recording it twice is harmless.
    pub async fn record_person_comment(&self, run_id: i64, comment_id: &str, person: &str) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "INSERT INTO executor_person_comments (comment_id, run_id, person, created_at) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (comment_id) DO NOTHING",
            )
            .bind(comment_id)
            .bind(run_id)
            .bind(person)
            .bind(now())
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// The comments people posted from the dashboard on the pull requests of these runs.
    pub async fn person_comments(&self, run_ids: &[i64]) -> Result<PersonComments> {
        let mut all = PersonComments::new();
        // One statement per run keeps the SQL a literal on both backends; the index makes each cheap.
        for run_id in run_ids {
            let rows: Vec<(String, String)> = on_pool!(self, |p| {
                sqlx::query_as("SELECT comment_id, person FROM executor_person_comments WHERE run_id = $1")
                    .bind(run_id)
                    .fetch_all(p)
                    .await?
            });
            all.extend(rows);
        }
        Ok(all)
    }
}
