//! The append-only audit trail: every status and state change, who made it, when and why.

use chrono::{DateTime, Utc};

use super::columns::event_columns;
use super::row::Cols;
use super::{Result, Store, on_pool};
use crate::domain::{Actor, By, TaskGid};

/// What an event records. Stored as text in `executor_events.kind`.
pub mod kind {
    pub const TASK_ADDED: &str = "task_added";
    pub const TASK_UPDATED: &str = "task_updated";
    pub const QUEUE_STATUS: &str = "queue_status";
    pub const RUN_CREATED: &str = "run_created";
    pub const RUN_STATE: &str = "run_state";
    pub const NOTE: &str = "note";
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Event {
    pub id: i64,
    pub at: DateTime<Utc>,
    pub actor: String,
    /// Which runner, when a runner made the change (its id in `executor_runners`); which person, when
    /// one did through the dashboard or the CLI.
    pub actor_id: Option<String>,
    pub task_gid: Option<String>,
    pub run_id: Option<i64>,
    pub kind: String,
    pub from_state: Option<String>,
    pub to_state: Option<String>,
    pub reason: Option<String>,
}

impl Event {
    /// Who made the change, as people read it: the person and where ("alice (web)"), or the actor and
    /// which runner when a runner did.
    pub fn who(&self) -> String {
        match (&self.actor_id, self.actor.as_str()) {
            (Some(person), "web" | "cli") => format!("{person} ({})", self.actor),
            (Some(id), actor) => format!("{actor} {id}"),
            (None, actor) => actor.to_string(),
        }
    }
}

/// One event to append; written inside the transaction of the change it records.
#[derive(Debug, Clone)]
pub(crate) struct NewEvent<'a> {
    pub actor: Actor,
    /// The runner instance (lease owner) that made the change, when one did.
    pub actor_id: Option<&'a str>,
    pub task_gid: Option<&'a str>,
    pub run_id: Option<i64>,
    pub kind: &'static str,
    pub from_state: Option<&'a str>,
    pub to_state: Option<&'a str>,
    pub reason: Option<&'a str>,
}

/// Appends `$event` (a `NewEvent`) through `$conn` (a transaction or pool of either backend), its
/// reason scrubbed by `$store`'s [`Scrub`](crate::store::Scrub).
macro_rules! insert_event {
    ($store:expr, $conn:expr, $event:expr) => {{
        let e = &$event;
        let reason = e.reason.map(|r| $store.scrub.apply(r));
        sqlx::query(
            "INSERT INTO executor_events (at, actor, task_gid, run_id, kind, from_state, to_state, reason, actor_id) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind($crate::store::now())
        .bind(e.actor.as_str())
        .bind(e.task_gid)
        .bind(e.run_id)
        .bind(e.kind)
        .bind(e.from_state)
        .bind(e.to_state)
        .bind(reason)
        .bind(e.actor_id)
        .execute($conn)
        .await
        .map(|_| ())
    }};
}
pub(crate) use insert_event;

/// Runs the statement `$sql` with `$binds` and records `$event` with it, in one write transaction that
/// commits only when the statement changed exactly one row (a conditional update whose condition held);
/// evaluates to whether it did. Expands inside a `Result`-returning method of `Store` (`$store`).
macro_rules! update_one_with_event {
    ($store:expr, $event:expr, $sql:expr, $($bind:expr),+ $(,)?) => {
        $crate::store::on_pool!($store, |p| {
            let mut tx = $crate::store::BeginWrite::begin_write(p).await?;
            let n = sqlx::query($sql)$(.bind($bind))+.execute(&mut *tx).await?.rows_affected();
            if n == 1 {
                $crate::store::events::insert_event!($store, &mut *tx, $event)?;
                tx.commit().await?;
            }
            n == 1
        })
    };
}
pub(crate) use update_one_with_event;

#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub task_gid: Option<TaskGid>,
    pub run_id: Option<i64>,
    pub since: Option<DateTime<Utc>>,
    pub limit: Option<i64>,
}

fn event_from_row(r: &impl Cols) -> Result<Event> {
    Ok(Event {
        id: r.req_int("id")?,
        at: r.req_time("at")?,
        actor: r.req_text("actor")?,
        actor_id: r.text("actor_id")?,
        task_gid: r.text("task_gid")?,
        run_id: r.int("run_id")?,
        kind: r.req_text("kind")?,
        from_state: r.text("from_state")?,
        to_state: r.text("to_state")?,
        reason: r.text("reason")?,
    })
}

impl Store {
    /// Events oldest first. Optional filters combine with AND; `limit` keeps the newest N.
    pub async fn events(&self, f: &EventFilter) -> Result<Vec<Event>> {
        let gid = f.task_gid.as_ref().map(|g| g.as_str());
        let limit = f.limit.unwrap_or(i64::MAX);
        let mut events: Vec<Event> = on_pool!(self, |p| {
            sqlx::query(
                concat!("SELECT ", event_columns!(), " FROM executor_events \
                 WHERE ($1 IS NULL OR task_gid = $1) AND ($2 IS NULL OR run_id = $2) AND ($3 IS NULL OR at >= $3) \
                 ORDER BY id DESC LIMIT $4"),
            )
            .bind(gid)
            .bind(f.run_id)
            .bind(f.since)
            .bind(limit)
            .fetch_all(p)
            .await?
            .iter()
            .map(event_from_row)
            .collect::<Result<_>>()?
        });
        events.reverse();
        Ok(events)
    }

    /// How many events were recorded at or after `since` (what "since you last looked" counts).
    pub async fn events_count_since(&self, since: DateTime<Utc>) -> Result<i64> {
        Ok(on_pool!(self, |p| {
            sqlx::query_scalar("SELECT COUNT(*) FROM executor_events WHERE at >= $1")
                .bind(since)
                .fetch_one(p)
                .await?
        }))
    }

    /// Records a free-form event (a decision, a notice) that is not a state change.
    pub async fn record_note(
        &self,
        by: impl Into<By<'_>>,
        task_gid: Option<&TaskGid>,
        run_id: Option<i64>,
        reason: &str,
    ) -> Result<()> {
        let by = by.into();
        let ev = NewEvent {
            actor: by.actor,
            actor_id: by.name,
            task_gid: task_gid.map(|g| g.as_str()),
            run_id,
            kind: kind::NOTE,
            from_state: None,
            to_state: None,
            reason: Some(reason),
        };
        on_pool!(self, |p| insert_event!(self, p, ev)?);
        Ok(())
    }
}
