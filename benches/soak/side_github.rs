//! The GitHub side of the soak: the tests' fake GitHub serving the bare repository, CI by
//! `workflow_dispatch` of `ci.yml` (answered with a `ci` check run at the branch's head), executor's
//! comments written as alex (as often on GitHub), every fault kind the fake has, and a GraphQL window
//! that empties.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::fake_github::{FakeGitHub, Fault, PostedKind};
use crate::host::{git, toml_string};
use crate::rng::Rng;
use crate::sides::{CiAsk, Forge, Person, Posted, Pr, PrState, SideConfig};

pub const REPO: &str = "octo/app";
const TOKEN_ENV: &str = "SOAK_GH_TOKEN";
const TOKEN: &str = "soak-token-0123456789abcdef";

const FAULTS: [Fault; 9] = [
    Fault::Status(502),
    Fault::SecondaryLimit,
    Fault::TooMany,
    Fault::PartialErrors,
    Fault::Reset,
    Fault::Hang,
    Fault::AppliedThen(502),
    // Carried out 2 s after the client's `request_timeout` (3 s) gave up, then answered; and carried out
    // but never answered (soak finding: a notice posted twice, its late copy taken for alex's comment).
    Fault::AppliedLate(5_000),
    Fault::AppliedUnanswered,
];

pub struct GitHubSide {
    fake: FakeGitHub,
    /// The bare repository the fake serves: CI reads a branch's head there.
    remote: PathBuf,
    /// Dispatches already taken as CI asks.
    dispatches_seen: Mutex<usize>,
}

impl GitHubSide {
    pub async fn start(remote: PathBuf) -> GitHubSide {
        let fake = FakeGitHub::start().await;
        let (owner, name) = REPO.split_once('/').expect("owner/name");
        fake.add_repo(owner, name, Some(remote.clone()));
        // executor's own comments come from the human's account, as often on GitHub.
        fake.set_login("alex");
        fake.set_token(TOKEN);
        fake.set_retry_after(2);
        GitHubSide { fake, remote, dispatches_seen: Mutex::new(0) }
    }
}

impl Forge for GitHubSide {
    fn name(&self) -> &'static str {
        "GitHub"
    }

    fn config(&self) -> SideConfig {
        let toml = format!(
            "[github]\napi_url = {}\ngraphql_url = {}\ntoken_env = [\"{TOKEN_ENV}\"]\ncheck_grace = \"2s\"\n\
             request_timeout = \"3s\"\nreserve_points = 200\n",
            toml_string(&self.fake.api_url()),
            toml_string(&self.fake.graphql_url()),
        );
        let repo_keys = format!(
            "forge = \"github\"\ngithub = \"{REPO}\"\nci_trigger = \"workflow:ci.yml\"\n\
             required_checks = [\"ci\"]\ntrusted_authors = [\"alex\"]\n"
        );
        SideConfig { toml, repo_keys, env: vec![(TOKEN_ENV.into(), TOKEN.into())] }
    }

    fn comment(&self, number: i64, who: Person, body: &str) {
        let (author, association) = match who {
            Person::Trusted => ("alex", "OWNER"),
            Person::Stranger => ("mallory", "NONE"),
        };
        self.fake.add_issue_comment(REPO, number, author, association, body);
    }

    fn close(&self, number: i64) {
        self.fake.close(REPO, number);
    }

    fn merge(&self, number: i64) {
        self.fake.merge(REPO, number);
    }

    fn prs(&self) -> Vec<Pr> {
        let prs = self.fake.prs(REPO);
        prs.into_iter()
            .map(|p| Pr { number: p.number, state: PrState::of(&p.state), branch: p.branch })
            .collect()
    }

    fn ci_asked(&self) -> Vec<CiAsk> {
        let dispatches = self.fake.dispatches();
        let mut seen = self.dispatches_seen.lock().unwrap_or_else(|p| p.into_inner());
        let new = dispatches[(*seen).min(dispatches.len())..]
            .iter()
            .filter(|(workflow, _)| workflow == "ci.yml")
            .map(|(_, branch)| CiAsk { branch: branch.clone(), id: 0 })
            .collect();
        *seen = dispatches.len();
        new
    }

    fn ci_answer(&self, ask: &CiAsk, passed: bool) -> Result<(), &'static str> {
        let prs = self.fake.prs(REPO);
        let Some(pr) = prs.iter().rev().find(|pr| pr.branch == ask.branch && pr.state == "OPEN") else {
            return Err("ci dispatched for a branch without an open pull request");
        };
        let head = git(&self.remote, &["rev-parse", &format!("refs/heads/{}", ask.branch)])
            .map_err(|_| "ci dispatched for a branch that is gone")?;
        let (conclusion, log) = if passed {
            ("SUCCESS", "ok\n")
        } else {
            ("FAILURE", "Run cargo test\ntest login ... FAILED\nerror: test_login failed\n")
        };
        self.fake.add_check_run(REPO, pr.number, &head, "ci", "COMPLETED", Some(conclusion), Some(log));
        Ok(())
    }

    fn ci_skip_next_push(&self) -> bool {
        false
    }

    fn request_count(&self) -> usize {
        let counts = self.fake.counts();
        counts.rest + counts.graphql
    }

    fn inject_fault(&self, rng: &mut Rng) {
        if let Some(fault) = rng.pick(&FAULTS) {
            self.fake.fail_next(*fault, 1);
        }
    }

    fn empty_window(&self, reset: DateTime<Utc>) {
        self.fake.set_rate_remaining(0);
        self.fake.set_rate_reset(reset);
    }

    fn refill_window(&self) {
        self.fake.set_rate_reset(Utc::now());
    }

    fn faults_served(&self) -> BTreeMap<String, u64> {
        self.fake.counts().faults.into_iter().map(|(k, n)| (format!("github {k}"), n as u64)).collect()
    }

    fn progress(&self) -> String {
        let counts = self.fake.counts();
        format!("github: {} REST, {} GraphQL ({} points)", counts.rest, counts.graphql, counts.graphql_points)
    }

    fn report(&self, hours: f64) -> (String, serde_json::Value) {
        let c = self.fake.counts();
        let mut t = String::new();
        let _ = write!(
            t,
            "  {} REST requests ({} not modified), {} GraphQL requests, {} points: {:.0} requests and {:.0} points an hour",
            c.rest,
            c.not_modified,
            c.graphql,
            c.graphql_points,
            (c.rest + c.graphql) as f64 / hours,
            c.graphql_points as f64 / hours
        );
        let json = json!({"rest": c.rest, "graphql": c.graphql, "points": c.graphql_points, "not_modified": c.not_modified});
        (t, json)
    }

    fn posted(&self) -> Vec<Posted> {
        self.fake
            .posted_comments()
            .into_iter()
            .filter(|c| {
                matches!(
                    c.kind,
                    PostedKind::IssueComment
                        | PostedKind::ThreadReply
                        | PostedKind::Review
                        | PostedKind::ReviewComment
                )
            })
            .map(|c| Posted {
                kind: format!("{:?}", c.kind),
                number: c.number,
                reply_to: c.reply_to,
                body: c.body,
            })
            .collect()
    }
}
