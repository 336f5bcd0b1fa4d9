//! The free filters over every claimable task, in pages, before any task is claimed for the model.
//!
//! Why a pass of its own: filters cost nothing, so they must never wait behind the model (one triage
//! at a time, minutes each) nor behind a spent budget; and claiming, counting and writing one task at a
//! time made 100,000 tasks take over an hour. Each page is read in the analysis order, judged in
//! memory, and its skips written at once ([`Store::record_filter_skips`]: only tasks still pending and
//! under no live claim). Tasks that pass are left untouched, in their order, for the claims.

use chrono::Utc;
use tokio::sync::{mpsc::UnboundedSender, watch};

use super::{Progress, fields};
use crate::filter::Filters;
use crate::store::{FilterSkip, PendingPage, STATISTICS_AFTER_ROWS, Store, StoreError};

/// Tasks read and judged at a time: a page of text in memory, and one write of its skips.
pub const PAGE: usize = 1000;

/// Runs `filters` over every task an analyzer could claim now, skipping those a rule names (each one
/// reported to `progress`); returns how many it skipped. Stops between pages when `stop` is set.
pub async fn filter_pending(
    store: &Store,
    filters: &Filters,
    max_attempts: u32,
    progress: &UnboundedSender<Progress>,
    stop: &watch::Receiver<bool>,
) -> Result<u64, StoreError> {
    let mut from = PendingPage::default();
    let mut skipped = 0;
    loop {
        if *stop.borrow() {
            return Ok(skipped);
        }
        let (tasks, next) = store.claimable_page(from, PAGE, max_attempts).await?;
        let now = Utc::now();
        let skips: Vec<FilterSkip> = tasks
            .iter()
            .filter_map(|task| {
                let raw = fields::raw_of(task);
                let skip = filters.skip_reason(&fields::task_fields(task, raw.as_ref()), now)?;
                Some(FilterSkip { task_gid: task.task_gid.clone(), rule: skip.rule, why: skip.why })
            })
            .collect();
        let full = tasks.len() == PAGE;
        drop(tasks);
        if !skips.is_empty() {
            let moved = store.record_filter_skips(&skips).await?;
            skipped += moved.len() as u64;
            let mut moved = moved.into_iter().peekable();
            for s in skips {
                if moved.peek() == Some(&s.task_gid) {
                    moved.next();
                    let _ =
                        progress.send(Progress::Filtered { task_gid: s.task_gid, rule: s.rule, why: s.why });
                }
            }
        }
        if !full {
            if skipped >= STATISTICS_AFTER_ROWS {
                // Many tasks left `pending`: the claims and counts that follow plan by what is left.
                store.refresh_statistics().await?;
            }
            return Ok(skipped);
        }
        from = next;
    }
}
