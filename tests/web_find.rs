//! Finding tasks on the queue page over real HTTP: sort headers that toggle, filters, the search, jump
//! to a page, a page past the end, a 400 naming each bad value, and forms that bring the user back to
//! the same view.

mod common;
mod web_support;

use executor::config::Config;
use executor::domain::{Actor, QueueStatus, TaskGid};
use executor::store::{NewTask, Store};
use reqwest::StatusCode;
use web_support::Dashboard;

const TOKEN: &str = "test-token-0123456789abcdef0123456789";

/// 120 tasks: T-000 … T-119, every third awaiting go from "inbox" in repo "api", the rest pending from
/// "reports"; priorities 1 to 4 on every other; T-007 is the needle.
async fn dashboard() -> (Dashboard, Store) {
    let db = common::sqlite();
    let store = db.open().await;
    let tasks: Vec<(TaskGid, NewTask)> = (0..120)
        .map(|i| {
            let inbox = i % 3 == 0;
            let t = NewTask {
                description: Some(if i == 7 {
                    "Fix the NEEDLE in login.rs".into()
                } else {
                    format!("Task number {i}")
                }),
                source: Some(if inbox { "inbox" } else { "reports" }.into()),
                repo: inbox.then(|| "api".into()),
                priority: (i % 2 == 0).then_some(1 + (i / 2) % 4),
                ..Default::default()
            };
            (TaskGid::parse(&format!("T-{i:03}")).unwrap(), t)
        })
        .collect();
    store.upsert_tasks(&tasks, Actor::Cli).await.unwrap();
    for (g, _) in tasks.iter().step_by(3) {
        store.set_task_status(g, QueueStatus::AwaitingGo, Actor::Cli, None).await.unwrap();
    }
    (Dashboard::start(store.clone(), Config::default(), TOKEN).await.holding(db), store)
}

/// Attribute values with the entities auto-escaping puts in (`/`, `&`) turned back.
fn links(page: &str) -> String {
    page.replace("&#x2f;", "/").replace("&amp;", "&")
}

/// The gids of the table's rows, in order.
fn rows(page: &str) -> Vec<String> {
    let page = links(page);
    page.split(r#"<td><a href="/tasks/"#).skip(1).map(|s| s[..s.find('"').unwrap()].to_string()).collect()
}

#[tokio::test]
async fn headers_sort_both_ways_and_say_so() {
    let (dash, _) = dashboard().await;
    let (_, page) = dash.get("/queue").await;
    let l = links(&page);
    assert!(l.contains(r#"<th scope="col" aria-sort="ascending"><a href="/queue?sort=priority&dir=desc" class="sort">Prio ▲</a>"#), "{l}");
    assert!(l.contains(r#"<a href="/queue?sort=gid" class="sort">GID</a>"#), "{l}");
    assert_eq!(rows(&page)[..3], ["T-000", "T-008", "T-016"], "the default: most urgent, then oldest");

    let (_, page) = dash.get("/queue?sort=gid&dir=desc&status=pending&page=2").await;
    let l = links(&page);
    assert!(
        l.contains(
            r#"aria-sort="descending"><a href="/queue?status=pending&sort=gid" class="sort">GID ▼</a>"#
        ),
        "{l}"
    );
    assert!(
        l.contains(r#"<a href="/queue?status=pending&sort=added" class="sort">Added</a>"#),
        "a new sort starts at page 1"
    );
    assert_eq!(rows(&page)[0], "T-044", "page 2 of 80 pending tasks, newest gid first");
    assert_eq!(page.matches("aria-sort=").count(), 1);
}

#[tokio::test]
async fn filters_and_the_search_narrow_and_keep_the_view_in_every_link() {
    let (dash, _) = dashboard().await;
    let (_, page) = dash.get("/queue?repo=api&prio_min=2&prio_max=3").await;
    let got = rows(&page);
    assert!(page.contains("<small>10 tasks</small>"), "{got:?}");
    assert!(got.iter().all(|g| g[2..].parse::<u32>().unwrap() % 6 == 0), "{got:?}");
    let (_, page) = dash.get("/queue?added_within=1d&q=needle%20login").await;
    assert_eq!(rows(&page), ["T-007"]);
    let (_, page) = dash.get("/queue?older_than=1d").await;
    assert!(page.contains("No tasks match."), "nothing is a day old yet");
    let (status, page) = dash.get("/queue?q=%22a%22%20OR%20*%20NEAR(").await;
    assert_eq!(status, StatusCode::OK, "FTS syntax is read as words: {page}");

    // Every link and form of a filtered, sorted page carries the whole view.
    let (_, page) = dash.get("/queue?source=reports&q=task&sort=added&dir=desc&page=2").await;
    let l = links(&page);
    assert!(
        l.contains(r#"href="/queue?source=reports&q=task&sort=added&dir=desc&page=1" rel="first""#),
        "{l}"
    );
    assert!(l.contains(r#"href="/queue?source=reports&q=task&sort=added&dir=desc&page=1" rel="prev""#));
    for (name, value) in
        [("source", "reports"), ("q", "task"), ("sort", "added"), ("dir", "desc"), ("page", "2")]
    {
        let field = format!(r#"<input type="hidden" name="{name}" value="{value}">"#);
        assert!(page.contains(&field), "the forms keep {name}: {page}");
    }
    assert!(page.contains(r#"<input type="number" name="page" min="1" max="2" value="2""#), "jump to a page");
}

#[tokio::test]
async fn a_form_brings_the_user_back_to_the_same_view() {
    let (dash, store) = dashboard().await;
    let (_, page) = dash.get("/queue?status=awaiting_go&sort=gid&dir=desc").await;
    let csrf = web_support::csrf_of(&page).unwrap();
    let body = "csrf=".to_string()
        + &csrf
        + "&status=awaiting_go&repo=api&prio_min=1&added_within=7d&q=task&sort=gid&dir=desc&page=1";
    let r = dash.post_form("/tasks/T-003/approve", body).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let location = r.headers()["location"].to_str().unwrap().to_string();
    assert!(
        location.starts_with(
            "/queue?status=awaiting_go&repo=api&prio_min=1&added_within=7d&q=task&sort=gid&dir=desc&page=1&flash="
        ),
        "{location}"
    );
    let t = store.task(&TaskGid::parse("T-003").unwrap()).await.unwrap();
    assert_eq!(t.status, QueueStatus::Approved);
}

#[tokio::test]
async fn a_page_past_the_end_says_so_and_bad_values_are_a_400_naming_them() {
    let (dash, _) = dashboard().await;
    let (status, page) = dash.get("/queue?status=awaiting_go&page=9").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Page 9 is past the end: there is 1 page."), "{page}");
    assert!(links(&page).contains(r#"<a href="/queue?status=awaiting_go&page=1">Go to the last page</a>"#));
    assert!(rows(&page).is_empty());
    let (_, page) = dash.get("/queue?page=3").await;
    let l = links(&page);
    assert!(l.contains(r#"href="/queue?page=1" rel="first""#) && !l.contains(r#"rel="last""#), "{l}");
    assert!(!l.contains(r#"rel="next""#));
    for (query, param) in [
        ("sort=title", "sort"),
        ("sort=gid%3B%20DROP%20TABLE", "sort"),
        ("dir=sideways", "dir"),
        ("status=nonsense", "status"),
        ("prio_min=high", "prio_min"),
        ("prio_max=1e99", "prio_max"),
        ("prio_min=5&prio_max=2", "prio_min"),
        ("added_within=soon", "added_within"),
        ("older_than=-1d", "older_than"),
        ("page=0", "page"),
        ("page=x", "page"),
        ("page=99999999999999999999", "page"),
    ] {
        let (status, page) = dash.get(&format!("/queue?{query}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}");
        assert!(page.contains(&format!("{param}: ")), "{query}: {page}");
    }
}
