//! Secrets stay secret in every form (issue 32, items 1–5, at the library's edges): a token cut in half
//! by a tail, a known value base64-, URL- or case-encoded, a foreign secret of a well-known shape, a CI
//! tail as the store writes it, and a branch named after task text.

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use executor::domain::{Actor, QueueStatus, TaskGid};
use executor::redact::Redactor;
use executor::store::NewTask;
use executor::worker::prompt::tail;

const TOKEN: &str = "ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8";

/// Whether any 12 consecutive characters of `secret` are in `text`.
fn leaks(secret: &str, text: &str) -> bool {
    (0..=secret.len() - 12).any(|i| text.contains(&secret[i..i + 12]))
}

/// Item 1: the prompt's `tail(log, 200, 16_000)` of a CI log whose cut lands inside the token keeps
/// none of it, and redaction afterwards has nothing left to miss.
#[test]
fn a_tail_cut_inside_a_token_keeps_no_part_of_it() {
    let redactor = Redactor::new([TOKEN.to_string()]);
    for into in [4, 20, 39] {
        let filler = "x".repeat(16_000 - (TOKEN.len() - into) - 22);
        let log = format!("step 1\nGH_TOKEN={TOKEN}\n{filler}\nerror: tests failed\n");
        let kept = redactor.redact(&tail(&log, 200, 16_000));
        assert!(!leaks(TOKEN, &kept), "cut {into} characters into the token: {}", &kept[..60]);
        assert!(kept.ends_with("error: tests failed\n"));
    }
}

/// Item 2: git's extraheader form of the token (`basic` + base64 of `x-access-token:TOKEN`), other
/// base64 alignments, URL-encoding and case changes are all redacted.
#[test]
fn a_known_secret_is_redacted_in_its_other_forms() {
    let redactor = Redactor::new([TOKEN.to_string(), "p@ss word/with+signs".to_string()]);
    let texts = [
        format!(
            "http.extraheader=AUTHORIZATION: basic {}",
            STANDARD.encode(format!("x-access-token:{TOKEN}"))
        ),
        format!("blob {}", STANDARD.encode(format!("a{TOKEN}"))),
        format!("blob {}", STANDARD.encode(format!("ab{TOKEN}\n"))),
        format!("shouted {}", TOKEN.to_uppercase()),
        format!("quiet {}", TOKEN.to_lowercase()),
        "url https://example.test/?p=p%40ss%20word%2Fwith%2Bsigns&x=1".to_string(),
    ];
    for text in texts {
        let out = redactor.redact(&text);
        assert!(out.contains("[REDACTED]"), "{text} -> {out}");
        assert!(!leaks(TOKEN, &out) && !leaks(&TOKEN.to_lowercase(), &out.to_lowercase()), "{out}");
        assert!(!out.contains("%40ss%20word"), "{out}");
        let core = &STANDARD.encode(format!("x-access-token:{TOKEN}"))[20..56];
        assert!(!out.contains(core), "{out}");
    }
}

/// Item 3: secrets nobody named, by their shape.
#[test]
fn foreign_secrets_of_well_known_shapes_are_redacted() {
    let nobody = Redactor::new(Vec::<String>::new());
    let aws_secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    let texts = [
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789".to_string(),
        "gho_abcdefghijklmnopqrstuvwxyz0123456789".to_string(),
        format!("github_pat_11AAAAAAA0{}", "b".repeat(72)),
        "Authorization: Bearer abcdef0123456789abcdef".to_string(),
        "authorization: basic dXNlcjpwYXNzd29yZDEyMw==".to_string(),
        format!("AKIAIOSFODNN7EXAMPLE {aws_secret}"),
        "SLACK=xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx".to_string(),
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkgQ2xhdWRlIHNheXMgaGk\n-----END EC PRIVATE KEY-----"
            .to_string(),
    ];
    for text in texts {
        let out = nobody.redact(&text);
        assert!(out.contains("[REDACTED]"), "{text} -> {out}");
        for secret in
            ["abcdefghijklmnop", "bbbbbbbbbbbbbbbb", "abcdef0123456789", "dXNlcjpwYXNz", "AKIAIOSFODNN7"]
        {
            assert!(!out.contains(secret), "{out}");
        }
        assert!(!leaks(aws_secret, &out) && !out.contains("MHcCAQEEIBkg"), "{out}");
    }
}

/// Item 4: a CI output tail is written redacted by a store that scrubs (every command's store does),
/// whatever process writes it.
#[tokio::test]
async fn a_ci_tail_is_stored_redacted() {
    let db = common::sqlite();
    let redactor = Redactor::new([TOKEN.to_string()]);
    let store = db.open().await.scrubbing(move |text| redactor.redact(text));
    let gid = TaskGid::parse("C-1").unwrap();
    let task = NewTask { description: Some("ci".into()), ..Default::default() };
    store.upsert_task(&gid, &task, Actor::Cli).await.unwrap();
    store.set_task_status(&gid, QueueStatus::AwaitingGo, Actor::Cli, None).await.unwrap();
    store.approve_task(&gid, false, Actor::Cli).await.unwrap();
    let run = store.create_run_for_task(&gid, Actor::Runner).await.unwrap().expect("a run");
    let pr = store.open_local_pr(run.id, None, "feature", "main").await.unwrap();
    let check = store.start_local_check(pr.id, "abc123", "ci", "/tmp/ci", "here").await.unwrap();
    let output = format!("exit status 1\n+ git push https://x-access-token:{TOKEN}@github.com/o/r\nfailed\n");
    assert!(store.finish_local_check(check, "failure", &output).await.unwrap());
    let stored = store.local_checks(pr.id).await.unwrap();
    let tail = stored[0].output_tail.as_deref().unwrap_or_default();
    assert!(!leaks(TOKEN, tail) && tail.contains("[REDACTED]"), "{tail}");
}

/// Item 5: a token-shaped word of the task text never becomes part of its branch name.
#[test]
fn a_branch_is_named_after_the_redacted_text() {
    let gid = TaskGid::parse("R-7").unwrap();
    let text = "rotate token ghp_q1w2e3r4t5y6u7i8o9p0q1w2e3r4t5y6u7i8 today";
    let name = executor::workspace::branch_name("executor/", &gid, text).unwrap();
    assert!(!name.contains("q1w2e3r4t5y6"), "{name}");
    assert_eq!(name, "executor/R-7-rotate-token-redacted-today");
}
