//! What an agent spent after its runner was declared lost. Its session ended as `host_lost` with the
//! usage recorded until then, but the agent may have run on — its runner frozen or killed before it
//! could stop it — until the host's next runner stopped it. That runner reads the rest of the agent's
//! output and puts what it reports on the session and on the run (soak finding: such dollars were on
//! no run).

use super::{BeginWrite, Result, Store, on_pool};

/// An agent's usage as its whole output reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spent {
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// From the price table, not the agent's own total.
    pub estimated: bool,
}

impl Store {
    /// Settles a `host_lost` session whose output was read from its start to `read_up_to`: the session's
    /// figures become `spent` where they are higher, the run gets the difference, and the session's
    /// output offset moves to `read_up_to`. Only if the offset is still `read_from` (what the caller
    /// saw): two runners of one host never add the same output twice. Returns the dollars added, or
    /// `None` when someone else settled it first.
    pub async fn settle_lost_spend(
        &self,
        session: i64,
        read_from: i64,
        read_up_to: i64,
        spent: &Spent,
    ) -> Result<Option<f64>> {
        on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            let before: Option<(i64, f64, i64, i64)> = sqlx::query_as(
                "SELECT run_id, cost_usd, input_tokens, output_tokens FROM executor_worker_sessions \
                 WHERE id = $1 AND end_reason = 'host_lost' AND output_offset = $2",
            )
            .bind(session)
            .bind(read_from)
            .fetch_optional(&mut *tx)
            .await?;
            let Some((run_id, cost, input, output)) = before else { return Ok(None) };
            let (new_cost, new_input, new_output) =
                (spent.cost_usd.max(cost), spent.input_tokens.max(input), spent.output_tokens.max(output));
            // Conditional again: on PostgreSQL a concurrent settler's commit makes this match nothing.
            let moved = sqlx::query(
                "UPDATE executor_worker_sessions SET output_offset = $1, cost_usd = $2, input_tokens = $3, \
                   output_tokens = $4, cost_estimated = CASE WHEN $5 = 1 AND $2 > cost_usd THEN 1 ELSE cost_estimated END \
                 WHERE id = $6 AND end_reason = 'host_lost' AND output_offset = $7",
            )
            .bind(read_up_to)
            .bind(new_cost)
            .bind(new_input)
            .bind(new_output)
            .bind(i64::from(spent.estimated))
            .bind(session)
            .bind(read_from)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if moved == 0 {
                return Ok(None);
            }
            let added = new_cost - cost;
            sqlx::query(
                "UPDATE executor_runs SET cost_usd = cost_usd + $1, input_tokens = input_tokens + $2, \
                   output_tokens = output_tokens + $3, \
                   cost_estimated = CASE WHEN $4 = 1 AND $1 > 0 THEN 1 ELSE cost_estimated END WHERE id = $5",
            )
            .bind(added)
            .bind(new_input - input)
            .bind(new_output - output)
            .bind(i64::from(spent.estimated))
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(Some(added))
        })
    }
}
