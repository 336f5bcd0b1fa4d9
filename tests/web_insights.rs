//! The insights page and its JSON over real HTTP (`web::serve` on 127.0.0.1:0, a real SQLite store):
//! every figure has its accessible name, caption and table; the numbers are the store's; whatever text
//! the database holds is escaped; a window that is not offered is refused with the reason.

mod common;
mod web_support;

use executor::config::Config;
use executor::domain::{Actor, EndReason, RunState, TaskGid, WorkerKind};
use executor::store::{GITHUB_GRAPHQL, NewTask, SessionStart, Store, WorkerEnd};
use reqwest::StatusCode;
use web_support::Dashboard;

const TOKEN: &str = "test-token-0123456789abcdef0123456789";
const HOSTILE_KIND: &str = "<script>alert('kind')</script>";

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).unwrap()
}

/// Today: three tasks in, two approved, one run complete with a $2.50 worker, and a session of a kind
/// no build writes (a hostile database row) that ended `finished`. GitHub: 1,200 points used this hour.
async fn history(db: &common::TestDb, store: &Store) {
    for g in ["a", "b", "c"] {
        let t = NewTask { description: Some(format!("task {g}")), ..Default::default() };
        store.upsert_task(&gid(g), &t, Actor::Cli).await.unwrap();
    }
    store.approve_task(&gid("b"), true, Actor::Cli).await.unwrap();
    store.approve_task(&gid("a"), true, Actor::Cli).await.unwrap();
    let run = store.create_run_for_task(&gid("a"), Actor::Runner).await.unwrap().unwrap().id;
    store
        .set_run_state_if(run, RunState::Queued, RunState::InProgress, None, Actor::Runner, "w")
        .await
        .unwrap();
    let s = store
        .begin_worker_session(run, WorkerKind::Queued, "claude", "h", &SessionStart::default())
        .await
        .unwrap()
        .unwrap();
    let end = WorkerEnd { cost_usd: 2.5, ..WorkerEnd::new(EndReason::Finished) };
    store.end_worker_session(s.id, None, &end).await.unwrap();
    store.set_run_state_if(run, RunState::InProgress, RunState::Pr, None, Actor::Runner, "pr").await.unwrap();
    store.complete_run_if(run, RunState::Pr, None, Actor::Runner, "green", &[]).await.unwrap();

    let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
    sqlx::query(
        "INSERT INTO executor_worker_sessions (run_id, kind, agent, host, started_at, ended_at, end_reason) \
         VALUES ($1, $2, 'claude', 'h', $3, $3, 'finished')",
    )
    .bind(run)
    .bind(HOSTILE_KIND)
    .bind(executor::store::now())
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    let reset = executor::store::now() + chrono::Duration::minutes(30);
    store.record_github_usage(GITHUB_GRAPHQL, reset, 3800, Some(5000)).await.unwrap();
}

#[tokio::test]
async fn every_figure_has_its_title_caption_and_table_with_the_stores_numbers() {
    let db = common::sqlite();
    let store = db.open().await;
    history(&db, &store).await;
    let dash = Dashboard::start(store, Config::default(), TOKEN).await;

    let (status, page) = dash.get("/insights").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(
        page.contains(r#"<a href="/insights" class="current" aria-current="page">Insights</a>"#),
        "in the nav"
    );
    assert!(page.contains("last 30 days"));
    for id in ["flow", "cost", "lead", "workers", "github"] {
        let start =
            page.find(&format!(r#"<section class="insight" id="{id}""#)).unwrap_or_else(|| panic!("{id}"));
        let section = &page[start..start + page[start..].find("</section>").unwrap()];
        assert!(section.contains("<figure>") && section.contains("<figcaption>"), "{id}: {section}");
        assert!(section.contains(r#"role="img""#), "{id}");
        // Tasks in and out are two panels, each a drawing with its own name.
        let drawings: &[&str] = if id == "flow" { &["flow-in", "flow-out"] } else { &[id] };
        for d in drawings {
            assert!(section.contains(&format!(r#"aria-labelledby="{d}-title {d}-desc""#)), "{d}");
            assert!(section.contains(&format!(r#"<title id="{d}-title">"#)), "{d}");
        }
        assert!(section.contains("<details>") && section.contains("<caption>"), "{id}");
        assert!(section.contains(r#"<th scope="col">"#) && section.contains(r#"<th scope="row">"#), "{id}");
    }
    let today = chrono::Utc::now().date_naive().to_string();
    // Day, intake, approved, skipped, completed, abandoned.
    let flow_row = format!(
        r#"<th scope="row">{today}</th><td class="num">3</td><td class="num">2</td><td class="num">0</td><td class="num">1</td><td class="num">0</td>"#
    );
    assert!(page.contains(&flow_row), "{page}");
    assert!(
        page.contains(
            "$2.50 per completed pull request: $2.50 spent over 30 days, 1 pull request completed."
        )
    );
    assert!(page.contains("Busiest hour: 1200 of 5000 points (24%)"), "{page}");
    // Issue 34 item 5: the runs that landed, as a table of its own (nothing merged in this history).
    let landed = &page[page.find(r#"<section class="insight" id="landed""#).expect("the landed table")..];
    assert!(landed.contains(r#"<th scope="col">merge rate</th>"#), "{landed}");
    assert!(landed.contains(r#"<th scope="row">(all)</th><td>(all)</td><td class="num">0</td>"#), "{landed}");
    // The database's text is escaped in the drawing and in the table, never markup.
    assert!(!page.contains(HOSTILE_KIND), "{page}");
    assert!(page.contains("&lt;script&gt;alert(&#39;kind&#39;)&lt;/script&gt;"), "the SVG's label");
    assert!(page.contains(r#"<th scope="row">&lt;script&gt;alert(&#x27;kind&#x27;)"#), "the table's cell");

    let (status, week) = dash.get("/insights?days=7").await;
    assert_eq!(status, StatusCode::OK);
    assert!(week.contains("last 7 days") && week.contains(r#"aria-current="page" class="current">7 days"#));
    let (status, refused) = dash.get("/insights?days=8").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(refused.contains("days must be 7, 30 or 90, not &#x27;8&#x27;"), "{refused}");
}

#[tokio::test]
async fn the_same_figures_come_as_json_for_scripts() {
    let db = common::sqlite();
    let store = db.open().await;
    history(&db, &store).await;
    let dash = Dashboard::start(store, Config::default(), TOKEN).await;

    let (status, body) = dash.get("/api/v1/insights?days=7").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["days"], 7);
    let flow = v["flow"].as_array().unwrap();
    assert_eq!(flow.len(), 7, "every day of the window");
    let today = &flow[6];
    assert_eq!(
        (today["intake"].as_i64(), today["approved"].as_i64(), today["completed"].as_i64()),
        (Some(3), Some(2), Some(1))
    );
    assert_eq!(v["cost_total"]["per_completed_usd"], 2.5);
    assert_eq!(v["lead_times"]["to_complete"]["count"], 1);
    let kinds: Vec<&str> =
        v["workers"].as_array().unwrap().iter().map(|k| k["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, [HOSTILE_KIND, "queued"], "JSON carries the text as it is: it is data");
    assert_eq!(v["github"]["hours"][0]["used"], 1200);
    assert_eq!(v["github"]["configured"], false);

    let (status, body) = dash.get("/api/v1/insights?days=365").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("days must be 7, 30 or 90"), "{body}");
}

/// Issue 34 item 5: on top of [`history`], run a's pull request merged and then reverted, and task b's run
/// given up after $6 with a reason holding markup; its task is labelled.
async fn landed_history(db: &common::TestDb, store: &Store) -> i64 {
    history(db, store).await;
    let a = store.list_runs(&Default::default()).await.unwrap()[0].id;
    store.set_merged_at(a, None, executor::store::now()).await.unwrap();
    assert!(store.set_reverted(a, "abc1234").await.unwrap());
    let raw = serde_json::json!({"labels": [{"name": "bug"}]});
    let t = NewTask { description: Some("task b".into()), raw: Some(raw), ..Default::default() };
    store.upsert_task(&gid("b"), &t, Actor::Cli).await.unwrap();
    let b = store.create_run_for_task(&gid("b"), Actor::Runner).await.unwrap().unwrap().id;
    let s = store
        .begin_worker_session(b, WorkerKind::Queued, "codex", "h", &SessionStart::default())
        .await
        .unwrap()
        .unwrap();
    let end = WorkerEnd { cost_usd: 6.0, ..WorkerEnd::new(EndReason::Finished) };
    store.end_worker_session(s.id, None, &end).await.unwrap();
    store.abandon_run(b, Actor::Cli, "<b>too big</b>").await.unwrap();
    b
}

#[tokio::test]
async fn reverts_slices_and_expensive_failures_are_on_the_page_and_in_the_json() {
    let db = common::sqlite();
    let store = db.open().await;
    let b = landed_history(&db, &store).await;
    let dash = Dashboard::start(store, Config::default(), TOKEN).await;

    let (status, page) = dash.get("/insights").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let landed = &page[page.find(r#"<section class="insight" id="landed""#).unwrap()..];
    // Merged 1, abandoned 1, merge rate 50%, reverted 1, revert rate 100%.
    let all = r#"<th scope="row">(all)</th><td>(all)</td><td class="num">1</td><td class="num">1</td><td class="num">50%</td><td class="num">1</td><td class="num">100%</td>"#;
    assert!(landed.contains(all), "{landed}");
    assert!(landed.contains("within 14 days of the merge"));
    let slices = &page[page.find(r#"<section class="insight" id="slices""#).expect("the slices")..];
    for by in ["repo", "agent", "worker_kind", "source", "label"] {
        assert!(slices.contains(&format!(r#"<table class="data" id="slice-{by}">"#)), "{by}");
    }
    let labels = &slices[slices.find(r#"id="slice-label""#).unwrap()..];
    assert!(labels.contains(r#"<th scope="col">label</th>"#), "{labels}");
    assert!(
        labels.contains(r#"<th scope="row">bug</th><td class="num">0</td><td class="num">1</td>"#),
        "{labels}"
    );
    let expensive = &page[page.find(r#"<section class="insight" id="expensive""#).expect("the failures")..];
    assert!(expensive.contains("more than $5.00"), "{expensive}");
    assert!(expensive.contains(&format!(r#"<a href="/runs/{b}">#{b}</a>"#)), "{expensive}");
    assert!(
        expensive.contains(r#"<a href="/tasks/b">task b</a>"#) && expensive.contains("$6.00"),
        "{expensive}"
    );
    assert!(
        expensive.contains("&lt;b&gt;too big&lt;&#x2f;b&gt;") && !expensive.contains("<b>too big"),
        "{expensive}"
    );

    let (status, body) = dash.get("/api/v1/insights").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!((v["landed"][0]["reverted"].as_u64(), v["revert_window_days"].as_u64()), (Some(1), Some(14)));
    let by_agent = v["slices"].as_array().unwrap().iter().find(|s| s["by"] == "agent").unwrap();
    let agents: Vec<&str> =
        by_agent["rows"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(agents, ["claude", "codex"]);
    let failures = &v["expensive_failures"];
    assert_eq!(failures["threshold_usd"], 5.0);
    assert_eq!(failures["runs"][0]["run_id"], b);
    assert_eq!(
        failures["runs"][0]["reason"], "abandoned by a human: <b>too big</b>",
        "JSON carries the text as data"
    );
}
