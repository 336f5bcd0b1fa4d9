//! The runs board and a run's page over real HTTP (a real SQLite store, `web::serve` on 127.0.0.1:0):
//! cards that say what a run is about and where it stands, a filter by state with a stable URL, and a
//! run page with its pull request's checks, the unresolved trusted comments, the diff stat, the latest
//! review's findings and every worker; the JSON API's run says the same. Task text and findings stay
//! text.

mod common;
mod runs_support;
mod web_support;

use executor::domain::{Actor, TaskGid};
use executor::store::{NewTask, Store};
use reqwest::StatusCode;
use runs_support::{FINDING, FRESH_TITLE, PR_TITLE, PR_URL, SILENT_TITLE, Scene};
use web_support::Dashboard;

const TOKEN: &str = "test-token-0123456789abcdef0123456789";

/// The dashboard over the runs scene (`runs_support::scene`), and the scene's ids to look for.
struct Site {
    dashboard: Dashboard,
    scene: Scene,
}

impl std::ops::Deref for Site {
    type Target = Dashboard;
    fn deref(&self) -> &Dashboard {
        &self.dashboard
    }
}

async fn site() -> Site {
    let db = common::sqlite();
    let store: Store = db.open().await;
    let scene = runs_support::scene(&store).await;
    let dashboard = Dashboard::start(store, runs_support::config(), TOKEN).await.holding(db);
    Site { dashboard, scene }
}

/// Text as minijinja escapes it for HTML.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('/', "&#x2f;")
        .replace('\'', "&#x27;")
        .replace('"', "&quot;")
}

/// A page's markup with the entities auto-escaping puts into attribute values (`/`, `&`) turned back.
fn links(page: &str) -> String {
    page.replace("&#x2f;", "/").replace("&amp;", "&")
}

/// The card of run `id` on a board page.
fn card(page: &str, id: i64) -> &str {
    let start =
        page.find(&format!(r#"data-run="{id}""#)).unwrap_or_else(|| panic!("no card for run {id}\n{page}"));
    let end = start + page[start..].find("</article>").unwrap();
    &page[start..end]
}

/// Run `id` as the JSON API answers it, asked with the bearer token as a script would.
async fn api_run(site: &Site, id: i64) -> serde_json::Value {
    let answer = site.client.get(format!("{}/api/v1/runs/{id}", site.base)).bearer_auth(TOKEN).send().await;
    answer.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn a_card_says_what_the_run_is_about_and_where_it_stands() {
    let site = site().await;
    let s = &site.scene;
    let (status, page) = site.get("/runs").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("data-live="), "the board follows changes live");
    assert!(!page.contains("<b>export</b>"), "task text is escaped");

    let pr = card(&page, s.pr_run);
    for expected in [
        escaped(PR_TITLE),
        format!(r#"href="{}""#, escaped(PR_URL)),
        "#7</a> open (draft)".to_string(),
        r#"<span class="ci ci-failing">failing</span> at abc1234def"#.to_string(),
        "seen 2m ago".to_string(),
        "1 unresolved trusted comment<".to_string(),
        format!(r#"href="/sessions/{}/log">fix_comments</a></span> running for"#, s.live_session),
        // 1.00 + 0.40 ended, 0.10 so far by the live worker.
        "$1.50".to_string(),
        "3 workers, CI 0, stuck 0".to_string(),
    ] {
        assert!(pr.contains(&expected), "{expected:?} not on the pr card:\n{pr}");
    }

    let silent = card(&page, s.silent_run);
    assert!(silent.contains(SILENT_TITLE), "{silent}");
    assert!(silent.contains(r#"class="error-text">"#) && silent.contains("idle_timeout after"), "{silent}");
    assert!(silent.contains("not observed yet") && silent.contains("$0.30"), "{silent}");
    assert!(silent.contains("stuck 1"), "{silent}");

    let fresh = card(&page, s.fresh_run);
    assert!(fresh.contains(FRESH_TITLE) && fresh.contains("none yet") && fresh.contains("$0.00"), "{fresh}");
}

#[tokio::test]
async fn the_board_filters_by_state_with_a_stable_url() {
    let site = site().await;
    let (status, page) = site.get("/runs?state=pr").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page.matches(r#"<article class="card run-card""#).count(), 1, "{page}");
    card(&page, site.scene.pr_run);
    assert!(!page.contains(SILENT_TITLE) && !page.contains(FRESH_TITLE));
    assert!(
        page.contains(r#"<a id="state-pr" href="/runs?state=pr" class="current" aria-current="page">pr <small>1</small>"#),
        "{page}"
    );
    assert!(page.contains(r#"href="/runs?state=in_progress">in_progress <small>1</small>"#), "{page}");
    assert!(page.contains(r#"href="/runs">all <small>3</small>"#), "{page}");

    let (_, page) = site.get("/runs?state=abandoned").await;
    assert!(page.contains("No runs."), "{page}");
    let (status, page) = site.get("/runs?state=bogus").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(page.contains("in_progress"), "the error names the states: {page}");
}

#[tokio::test]
async fn the_run_page_shows_checks_comments_diff_review_and_workers() {
    let site = site().await;
    let s = &site.scene;
    let (status, page) = site.get(&format!("/runs/{}", s.pr_run)).await;
    assert_eq!(status, StatusCode::OK);
    for expected in [
        escaped(PR_TITLE),
        // Checks at the head, each linked, the failing one marked, with its summary.
        r#"href="https:&#x2f;&#x2f;github.test&#x2f;octo&#x2f;app&#x2f;runs&#x2f;build" rel="noreferrer">build</a>"#.into(),
        r#"test</a><br><small>2 tests failed</small></td><td class="error-text">failure</td>"#.into(),
        "Changes: 3 files, +120 −4".into(),
        // Only alice's unresolved comment: mallory is not trusted, alice's other thread is resolved.
        "<strong>alice</strong> on <code>src&#x2f;lib.rs:12</code>".into(),
        "please &lt;i&gt;rename&lt;&#x2f;i&gt; this".into(),
        // The review: its verdict at the head it reviewed, its summary and findings.
        r#"Verdict <strong class="ci-failing">fail</strong> at abc1234def"#.into(),
        "Two problems before a human looks.".into(),
        format!("<code>src&#x2f;export.rs:3</code>: {}", escaped(FINDING)),
        "No test covers the import.".into(),
        // Every worker, with its time, how it ended, its cost and its log.
        format!(r#"<td>#{}</td><td>pr_review</td>"#, s.review_session),
        format!(r#"<a href="/sessions/{}/log">log</a>"#, s.review_session),
        "so far</td><td>running</td><td>$0.10</td><td>50 in &#x2f; 5 out</td>".into(),
        escaped("$1.50 (1050 in / 105 out tokens)"),
    ] {
        assert!(page.contains(&expected), "{expected:?} not on the run page:\n{page}");
    }
    for absent in ["spam from mallory", "an old remark", "<script>alert", "<i>rename"] {
        assert!(!page.contains(absent), "{absent:?} on the run page");
    }

    let (_, page) = site.get(&format!("/runs/{}", s.silent_run)).await;
    for expected in ["Not observed yet.", "No review yet.", "idle_timeout", SILENT_TITLE] {
        assert!(page.contains(expected), "{expected:?} not on the silent run's page:\n{page}");
    }
}

#[tokio::test]
async fn the_api_run_has_its_cost_so_far_latest_review_and_diff() {
    let site = site().await;
    let s = &site.scene;
    let v = api_run(&site, s.pr_run).await;
    assert_eq!(v["cost_so_far_usd"].as_f64().map(|c| (c * 100.0).round()), Some(150.0), "{v}");
    assert_eq!(v["latest_review"]["session"], s.review_session);
    assert_eq!(v["latest_review"]["verdict"], "fail");
    assert_eq!(v["latest_review"]["head"], runs_support::HEAD);
    assert_eq!(v["latest_review"]["result"]["findings"][0]["body"], FINDING);
    assert_eq!(v["pull_request"]["diff"], serde_json::json!({"files": 3, "additions": 120, "deletions": 4}));
    let v = api_run(&site, s.fresh_run).await;
    assert!(v["latest_review"].is_null() && v["pull_request"].is_null(), "{v}");
    assert_eq!(v["cost_so_far_usd"], 0.0);
}

/// 1,000 runs, of which 100 are ended (complete or abandoned): the scale the board was read at.
async fn thousand_runs() -> (Dashboard, Vec<i64>) {
    let db = common::sqlite();
    let store: Store = db.open().await;
    let tasks: Vec<(TaskGid, NewTask)> = (0..1000)
        .map(|i| {
            let text = format!("Make the importer faster, part {i}\nSo that big files load.");
            (
                TaskGid::parse(&format!("K-{i}")).unwrap(),
                NewTask { description: Some(text), ..Default::default() },
            )
        })
        .collect();
    store.upsert_tasks(&tasks, Actor::Cli).await.unwrap();
    let mut ids = Vec::new();
    for (g, _) in &tasks {
        store.approve_task(g, true, Actor::Cli).await.unwrap();
        ids.push(store.create_run_for_task(g, Actor::Runner).await.unwrap().expect("a run").id);
    }
    for id in ids.iter().step_by(10) {
        store.abandon_run(*id, Actor::Cli, "not wanted").await.unwrap();
    }
    store.set_run_workspace(ids[501], None, "/w", "executor/k-501-csv-export").await.unwrap();
    let dashboard = Dashboard::start(store, runs_support::config(), TOKEN).await.holding(db);
    (dashboard, ids)
}

/// Issue 35, item 9: 1,000 runs were a 926 KiB page. The board shows a page of them, newest first, with
/// links to the next and the previous; the ended runs fold into a count with a link.
#[tokio::test]
async fn a_thousand_runs_are_a_small_page_with_the_ended_ones_folded() {
    let (site, ids) = thousand_runs().await;
    let (status, page) = site.get("/runs").await;
    assert_eq!(status, StatusCode::OK);
    eprintln!("GET /runs with 1,000 runs: {} bytes", page.len());
    assert!(page.len() < 128 * 1024, "the board of 1,000 runs is {} KiB", page.len() / 1024);
    assert_eq!(page.matches(r#"<article class="card run-card""#).count(), 100, "one page of cards");
    assert!(page.contains("1–100 of 900 not ended"), "{}", page);
    card(&page, ids[999]);
    assert!(links(&page).contains(r#"<a href="/runs?page=2" rel="next">"#), "a next page");
    assert!(!page.contains(r#"rel="prev""#));
    // The ended runs: folded, counted, one link away; none of their cards on the board.
    assert!(!page.contains(&format!(r#"data-run="{}""#, ids[990])), "an abandoned run is folded");
    assert!(page.contains(r#"aria-label="abandoned runs, folded""#), "{page}");
    assert!(links(&page).contains(r#"<a href="/runs?state=abandoned">Show the 100 abandoned runs</a>"#));

    let (_, last) = site.get("/runs?page=9").await;
    assert!(
        last.contains("801–900 of 900") && last.contains(r#"rel="prev""#) && !last.contains(r#"rel="next""#)
    );
    let (_, unfolded) = site.get("/runs?ended=show").await;
    assert!(
        unfolded.contains("1–100 of 1000") && links(&unfolded).contains(r#"href="/runs?ended=show&page=2""#)
    );
    card(&unfolded, ids[990]);
    let (_, abandoned) = site.get("/runs?state=abandoned&page=1").await;
    assert_eq!(abandoned.matches(r#"<article class="card run-card""#).count(), 100);
    let (_, past) = site.get("/runs?page=12").await;
    assert!(past.contains("Page 12 is past the end: there are 9 pages."), "{past}");
    let (status, _) = site.get("/runs?page=0").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a page that is no page is refused");
}

/// Issue 35, item 9: `?q=` was silently ignored. It finds runs by task gid, task text, branch and pull
/// request URL, and says what it searched for.
#[tokio::test]
async fn the_board_searches_runs() {
    let (site, ids) = thousand_runs().await;
    let (_, page) = site.get("/runs?q=k-77").await;
    assert!(page.contains("matching “k-77”"), "the search is said: {}", page);
    assert!(page.contains(r#"<input type="search" name="q" value="k-77""#), "and kept in its box");
    // K-77 and K-770…K-779 (K-770 abandoned: folded, counted).
    assert_eq!(page.matches(r#"<article class="card run-card""#).count(), 10, "{page}");
    card(&page, ids[77]);
    assert!(page.contains("Show the 1 abandoned run</a>"), "{page}");
    let (_, page) = site.get("/runs?q=CSV-export").await;
    assert_eq!(page.matches(r#"<article class="card run-card""#).count(), 1);
    card(&page, ids[501]);
    // Words of the task's text (K-120 is abandoned).
    let (_, page) = site.get("/runs?q=part+12%0A").await;
    assert!(page.contains("<small>10 not ended matching “part 12”"), "task text: {page}");
    let (_, page) = site.get("/runs?q=%27%3B+DROP+TABLE+executor_runs").await;
    assert!(page.contains("0 not ended") && page.contains("No runs."), "{}", page);
    let (status, _) = site.get(&format!("/runs?q={}", "x".repeat(201))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a search too long is refused, visibly");
}

/// The run page, the board and the task page name the run's change in its repository's forge's words:
/// "merge request", `MR !7` on GitLab; "pull request", `PR #7` on GitHub and the local forge, as before.
#[tokio::test]
async fn a_gitlab_runs_pages_say_merge_request_and_a_github_runs_pull_request() {
    let on_gitlab = |mut config: executor::config::Config| {
        for repo in config.repos.values_mut() {
            repo.forge = "gitlab".into();
            repo.gitlab = "octo/app".into();
        }
        config
    };
    let configs = [(on_gitlab(runs_support::config()), true), (runs_support::config(), false)];
    for (config, gitlab) in configs {
        let db = common::sqlite();
        let store: Store = db.open().await;
        let s = runs_support::scene(&store).await;
        let site = Dashboard::start(store, config, TOKEN).await.holding(db);
        let (noun, title, reference, short) = if gitlab {
            ("merge request", "Merge request", "!7", "MR")
        } else {
            ("pull request", "Pull request", "#7", "PR")
        };

        let (status, run_page) = site.get(&format!("/runs/{}", s.pr_run)).await;
        assert_eq!(status, StatusCode::OK);
        for expected in [
            format!("<dt>{noun}</dt><dd>{short} {reference}: <a href="),
            format!("<h2>{title}</h2>"),
            format!("Comment on the {noun} (a trusted comment"),
        ] {
            assert!(run_page.contains(&expected), "{expected:?} not on the run page:\n{run_page}");
        }
        let (_, board) = site.get("/runs").await;
        let card = card(&board, s.pr_run);
        let expected =
            format!("<dt>{short}</dt><dd><a href=\"{}\" rel=\"noreferrer\">{reference}</a>", escaped(PR_URL));
        assert!(card.contains(&expected), "{expected:?} not on the card:\n{card}");
        let (_, task_page) = site.get("/tasks/RUN-1").await;
        assert!(task_page.contains(&format!("<th scope=\"col\">{short}</th>")), "{task_page}");
        assert!(task_page.contains(&format!("rel=\"noreferrer\">{reference}</a>")), "{task_page}");
        if gitlab {
            for page in [&run_page, &board, &task_page] {
                assert!(!page.contains("pull request") && !page.contains("PR #"), "GitHub's words:\n{page}");
            }
        }
    }
}
