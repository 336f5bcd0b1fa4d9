//! The analyzer's queries follow the partial index of pending tasks on SQLite: no sort of the whole
//! queue per claim or per page (46 ms a claim at 100,000 pending tasks, when it sorted).

use super::super::analysis::claim_sql;
use super::*;

async fn plan(sql: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("sqlite://{}", dir.path().join("plan.db").display())).await.unwrap();
    store.migrate().await.unwrap();
    let Pool::Sqlite(p) = &store.pool else { unreachable!("a SQLite store") };
    let rows = sqlx::query(&format!("EXPLAIN QUERY PLAN {sql}")).fetch_all(p).await.unwrap();
    rows.iter().map(|r| sqlx::Row::get::<String, _>(r, "detail")).collect()
}

fn sqlite() -> Pool {
    Pool::Sqlite(sqlx::SqlitePool::connect_lazy("sqlite::memory:").unwrap())
}

#[tokio::test]
async fn a_claim_reads_the_pending_index_in_order() {
    let steps = plan(&claim_sql(&sqlite())).await;
    assert!(steps.iter().any(|s| s.contains("executor_queue_pending")), "{steps:?}");
    assert!(!steps.iter().any(|s| s.contains("TEMP B-TREE")), "no sort: {steps:?}");
}

#[tokio::test]
async fn a_page_for_the_filters_reads_the_pending_index_in_order() {
    let steps = plan(&page_sql(&sqlite())).await;
    assert!(steps.iter().any(|s| s.contains("executor_queue_pending")), "{steps:?}");
    assert!(!steps.iter().any(|s| s.contains("TEMP B-TREE")), "no sort: {steps:?}");
}
