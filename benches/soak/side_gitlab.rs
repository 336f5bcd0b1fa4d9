//! The GitLab side of the soak: the tests' fake GitLab following the bare repository's pushes, where
//! each new head starts a pipeline with one `ci` job (now and then a push starts none, and executor must
//! create one: `ci_trigger = "pipeline"`), answered by the soak's CI; executor's notes written as alex,
//! as on the GitHub side; every fault kind the fake has; and a rate-limit window that empties.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::json;

use crate::fake_gitlab::{FakeGitLab, Fault};
use crate::host::toml_string;
use crate::rng::Rng;
use crate::sides::{CiAsk, Forge, Person, Posted, Pr, PrState, SideConfig};

pub const PROJECT: &str = "group/app";
const TOKEN_ENV: &str = "SOAK_GL_TOKEN";
const TOKEN: &str = "glpat-soak-0123456789abcdef";
/// GitLab's requests a window holds (the soak compresses days: the window is given back often).
const WINDOW: i64 = 100_000;

const FAULTS: [Fault; 8] = [
    Fault::Status(502),
    Fault::Status(503),
    Fault::TooMany,
    Fault::Reset,
    Fault::Hang,
    Fault::AppliedThen(502),
    // Carried out 2 s after the client's `request_timeout` (3 s) gave up, then answered; and carried out
    // but never answered.
    Fault::AppliedLate(5_000),
    Fault::AppliedUnanswered,
];

pub struct GitLabSide {
    fake: FakeGitLab,
    /// Pipelines already taken as CI asks.
    pipelines_seen: Mutex<usize>,
}

impl GitLabSide {
    pub async fn start(remote: PathBuf) -> GitLabSide {
        let fake = FakeGitLab::start().await;
        fake.set_token(TOKEN);
        fake.add_project(PROJECT, Some(remote));
        fake.set_default_pipeline(PROJECT, &[("ci", "PENDING")]);
        // executor's own notes come from the human's account, as on the GitHub side.
        fake.set_username("alex");
        fake.set_retry_after(2);
        fake.set_rate_limit(WINDOW, Utc::now() + TimeDelta::hours(1));
        GitLabSide { fake, pipelines_seen: Mutex::new(0) }
    }
}

impl Forge for GitLabSide {
    fn name(&self) -> &'static str {
        "GitLab"
    }

    fn config(&self) -> SideConfig {
        let toml = format!(
            "[gitlab]\nurl = {}\ntoken_env = [\"{TOKEN_ENV}\"]\ncheck_grace = \"2s\"\nrequest_timeout = \"3s\"\n",
            toml_string(&self.fake.url)
        );
        let repo_keys = format!(
            "forge = \"gitlab\"\ngitlab = \"{PROJECT}\"\nci_trigger = \"pipeline\"\n\
             required_checks = [\"ci\"]\ntrusted_authors = [\"alex\"]\n"
        );
        SideConfig { toml, repo_keys, env: vec![(TOKEN_ENV.into(), TOKEN.into())] }
    }

    /// alex opens a thread (resolvable: executor answers and resolves it); a stranger a plain note.
    fn comment(&self, number: i64, who: Person, body: &str) {
        match who {
            Person::Trusted => self.fake.add_discussion(PROJECT, number, "alex", body, true, None),
            Person::Stranger => self.fake.add_discussion(PROJECT, number, "mallory", body, false, None),
        };
    }

    fn close(&self, number: i64) {
        self.fake.close(PROJECT, number);
    }

    fn merge(&self, number: i64) {
        self.fake.merge(PROJECT, number);
    }

    fn prs(&self) -> Vec<Pr> {
        let mrs = self.fake.mrs(PROJECT);
        mrs.into_iter()
            .map(|m| Pr { number: m.iid, state: PrState::of(&m.state), branch: m.source_branch })
            .collect()
    }

    fn ci_asked(&self) -> Vec<CiAsk> {
        let pipelines = self.fake.pipelines(PROJECT);
        let mut seen = self.pipelines_seen.lock().unwrap_or_else(|p| p.into_inner());
        let new = pipelines[(*seen).min(pipelines.len())..]
            .iter()
            .flat_map(|p| {
                let ci = p.jobs.iter().filter(|j| j.name == "ci" && j.status == "PENDING");
                ci.map(|j| CiAsk { branch: p.reference.clone(), id: j.id })
            })
            .collect();
        *seen = pipelines.len();
        new
    }

    fn ci_answer(&self, ask: &CiAsk, passed: bool) -> Result<(), &'static str> {
        if passed {
            self.fake.set_job_trace(ask.id, "$ make ci\nok\n");
            self.fake.set_job(ask.id, "SUCCESS");
        } else {
            self.fake
                .set_job_trace(ask.id, "$ cargo test\ntest login ... FAILED\nerror: test_login failed\n");
            self.fake.set_job(ask.id, "FAILED");
        }
        Ok(())
    }

    fn ci_skip_next_push(&self) -> bool {
        self.fake.skip_push_pipelines(PROJECT, 1);
        true
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
        self.fake.set_rate_limit(0, reset);
    }

    fn refill_window(&self) {
        self.fake.set_rate_limit(WINDOW, Utc::now() + TimeDelta::hours(1));
    }

    fn faults_served(&self) -> BTreeMap<String, u64> {
        self.fake.counts().faults.into_iter().map(|(k, n)| (format!("gitlab {k}"), n as u64)).collect()
    }

    fn progress(&self) -> String {
        let counts = self.fake.counts();
        format!("gitlab: {} REST, {} GraphQL", counts.rest, counts.graphql)
    }

    fn report(&self, hours: f64) -> (String, serde_json::Value) {
        let c = self.fake.counts();
        let route = |name: &str| c.by_route.get(name).copied().unwrap_or(0);
        let mut t = String::new();
        let _ = write!(
            t,
            "  {} REST requests ({} merge request listings), {} GraphQL requests: {:.0} requests an hour; \
             {} pipelines ({} created by executor)",
            c.rest,
            route("mr_list"),
            c.graphql,
            (c.rest + c.graphql) as f64 / hours,
            self.fake.pipelines(PROJECT).len(),
            route("pipeline_create"),
        );
        let json = json!({"rest": c.rest, "graphql": c.graphql, "mr_list": route("mr_list"), "pipeline_create": route("pipeline_create")});
        (t, json)
    }

    fn posted(&self) -> Vec<Posted> {
        self.fake
            .posted_notes()
            .into_iter()
            .map(|n| Posted {
                kind: n.route.to_string(),
                number: n.iid,
                reply_to: n.discussion,
                body: n.body,
            })
            .collect()
    }
}
