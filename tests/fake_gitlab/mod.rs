//! A fake GitLab for the GitLab forge's tests and the benchmark: an in-process HTTP server on
//! 127.0.0.1 answering the GraphQL document of `src/forge/gitlab/graphql/` and the REST calls the forge
//! makes under `/api/v4`, in GitLab's documented shapes. Tests seed it (projects, merge requests,
//! pipelines, discussions), inject faults, and assert on what the client did.
//!
//! Use it with `#[path = "fake_gitlab/mod.rs"] mod fake_gitlab;` (or `../tests/fake_gitlab/mod.rs` from
//! `benches/`). It depends on no other test module.
//!
//! Faithful where the forge's logic depends on it: a job finishing does not change a merge request's
//! `updated_at` (a note, a push, a label, a merge does); GraphQL's times have whole seconds and REST's
//! milliseconds; one open merge request per source branch (409 for a second); a push starts the
//! pipeline planned for it ([`FakeGitLab::plan_pipelines`]).
#![allow(dead_code)]

mod graphql;
mod rest;
mod server;
mod state;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use server::{Shared, dispatch, lock};
use state::Project;
pub use state::State;
#[allow(unused_imports)]
pub use state::{Counts, FakeDiscussion, FakeJob, FakeMr, FakeNote, FakePipeline, PostedNote};

/// A failure served instead of the normal answer (see [`FakeGitLab::fail_next`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// That HTTP status, not carried out.
    Status(u16),
    /// 429 with `Retry-After` ([`FakeGitLab::set_retry_after`]).
    TooMany,
    /// Carried out (a write is applied), then answered with that status: an answer lost on the way.
    AppliedThen(u16),
    /// The connection is cut in the middle of the answer (not carried out).
    Reset,
    /// Never answered, not carried out: the client must time out.
    Hang,
    /// Carried out this many milliseconds after it arrived, then answered: with more than the client's
    /// `request_timeout`, a write the client gave up on lands later, whether or not it still waits.
    AppliedLate(u64),
    /// Carried out at once and never answered: the client times out on a write that went through.
    AppliedUnanswered,
}

pub struct FakeGitLab {
    /// `http://127.0.0.1:PORT` (`[gitlab] url`).
    pub url: String,
    shared: Arc<Shared>,
}

impl FakeGitLab {
    pub async fn start() -> FakeGitLab {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let url = format!("http://127.0.0.1:{}", listener.local_addr().expect("local addr").port());
        let shared = Arc::new(Shared { state: Mutex::new(State::new()), base: url.clone() });
        let app = axum::Router::new().fallback(dispatch).with_state(shared.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeGitLab { url, shared }
    }

    /// Starts the server on a runtime of its own thread, for synchronous callers (the benchmark).
    pub fn start_in_background() -> FakeGitLab {
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            runtime.block_on(async move {
                let _ = sender.send(FakeGitLab::start().await);
                std::future::pending::<()>().await;
            });
        });
        receiver.recv().expect("fake GitLab started")
    }

    /// The token the fake accepts.
    pub fn token(&self) -> String {
        self.state().token.clone()
    }

    /// `[gitlab]` for this fake (short timeouts for the tests).
    pub fn config(&self) -> executor::config::GitLab {
        executor::config::GitLab { url: self.url.clone(), ..Default::default() }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared)
    }

    /// A project `group/project`. With `bare_repo`, branch heads are read from that git directory before
    /// every answer, as GitLab follows pushes.
    pub fn add_project(&self, path: &str, bare_repo: Option<PathBuf>) {
        // The branches already there start no pipeline: only pushes from now on do.
        let branches = bare_repo.as_deref().map(server::branch_heads_now).unwrap_or_default();
        let project = Project { path: path.into(), bare: bare_repo, branches, ..Default::default() };
        self.state().projects.insert(path.into(), project);
    }

    /// A merge request opened by a human; its iid.
    pub fn create_mr(&self, project: &str, branch: &str, title: &str, head_sha: &str) -> i64 {
        let mut state = self.state();
        let (id, now) = (state.id(), state.now());
        let p = state.project(project).expect("project");
        let iid = p.mrs.len() as i64 + 1;
        p.mrs.push(FakeMr {
            iid,
            id,
            title: title.into(),
            description: String::new(),
            state: "opened".into(),
            source_branch: branch.into(),
            target_branch: "main".into(),
            head_sha: head_sha.into(),
            labels: Vec::new(),
            conflicts: false,
            merge_status: "MERGEABLE".into(),
            updated_at: now,
            discussions: Vec::new(),
        });
        iid
    }

    /// A branch at `sha`, as if pushed (for a project without a bare repository).
    pub fn set_branch(&self, project: &str, branch: &str, sha: &str) {
        self.state().project(project).expect("project").branches.insert(branch.into(), sha.into());
    }

    pub fn mr(&self, project: &str, iid: i64) -> FakeMr {
        self.state().mr(project, iid).expect("merge request").clone()
    }

    pub fn mrs(&self, project: &str) -> Vec<FakeMr> {
        self.state().projects[project].mrs.clone()
    }

    /// Changes a merge request as a person or GitLab would, bumping `updated_at`.
    pub fn edit_mr(&self, project: &str, iid: i64, edit: impl FnOnce(&mut FakeMr)) {
        let mut state = self.state();
        edit(state.mr(project, iid).expect("merge request"));
        state.touch(project, iid);
    }

    /// Changes a merge request without bumping `updated_at` (as a mergeability recomputation does).
    pub fn edit_mr_quietly(&self, project: &str, iid: i64, edit: impl FnOnce(&mut FakeMr)) {
        edit(self.state().mr(project, iid).expect("merge request"));
    }

    pub fn merge(&self, project: &str, iid: i64) {
        self.edit_mr(project, iid, |m| m.state = "merged".into());
    }

    pub fn close(&self, project: &str, iid: i64) {
        self.edit_mr(project, iid, |m| m.state = "closed".into());
    }

    /// A pipeline at `sha` with these jobs (name, `CiJobStatus`); its id.
    pub fn add_pipeline(&self, project: &str, sha: &str, jobs: &[(&str, &str)]) -> i64 {
        let jobs: Vec<(String, String)> = jobs.iter().map(|(n, s)| (n.to_string(), s.to_string())).collect();
        self.state().add_pipeline(project, sha, "", &jobs)
    }

    /// The jobs of the pipelines the next pushes (or pipeline creations) start, one entry each.
    pub fn plan_pipelines(&self, project: &str, plans: &[&[(&str, &str)]]) {
        let mut state = self.state();
        let p = state.project(project).expect("project");
        for jobs in plans {
            p.plan.push_back(jobs.iter().map(|(n, s)| (n.to_string(), s.to_string())).collect());
        }
    }

    /// The jobs of every pipeline a push (or a pipeline creation) starts when none is planned; without
    /// it, an unplanned push starts none and a creation one `test` job.
    pub fn set_default_pipeline(&self, project: &str, jobs: &[(&str, &str)]) {
        let jobs = jobs.iter().map(|(n, s)| (n.to_string(), s.to_string())).collect();
        self.state().project(project).expect("project").default_pipeline = Some(jobs);
    }

    /// The next `pushes` new heads start no pipeline (as when a project's pipelines run only on merge
    /// request events, or GitLab dropped one).
    pub fn skip_push_pipelines(&self, project: &str, pushes: usize) {
        self.state().project(project).expect("project").skip_pushes += pushes;
    }

    pub fn pipelines(&self, project: &str) -> Vec<FakePipeline> {
        self.state().projects[project].pipelines.clone()
    }

    /// A job's status changes (`updated_at` of no merge request moves).
    pub fn set_job(&self, job_id: i64, status: &str) {
        self.state().job_mut(job_id).expect("job").status = status.into();
    }

    pub fn set_job_trace(&self, job_id: i64, trace: &str) {
        self.state().job_mut(job_id).expect("job").trace = trace.into();
    }

    /// Every job of the pipelines at `sha` set to `status`.
    pub fn finish_pipelines_at(&self, project: &str, sha: &str, status: &str) {
        let mut state = self.state();
        for p in state.project(project).expect("project").pipelines.iter_mut().filter(|p| p.sha == sha) {
            for j in &mut p.jobs {
                j.status = status.into();
            }
        }
    }

    /// A note by `author`: a thread (`resolvable`) or a plain comment, on `position` (path, line) of the
    /// diff when given. Its discussion's id and the note's.
    pub fn add_discussion(
        &self,
        project: &str,
        iid: i64,
        author: &str,
        body: &str,
        resolvable: bool,
        position: Option<(&str, i64)>,
    ) -> (String, i64) {
        let mut state = self.state();
        let (id, now) = (state.id(), state.now());
        let discussion = format!("{id:040x}");
        let note = FakeNote {
            id,
            body: body.into(),
            system: false,
            author: author.into(),
            position: position.map(|(p, l)| (p.to_string(), l)),
            created_at: now,
        };
        let d = FakeDiscussion { id: discussion.clone(), resolvable, resolved: false, notes: vec![note] };
        state.mr(project, iid).expect("merge request").discussions.push(d);
        state.touch(project, iid);
        (discussion, id)
    }

    pub fn add_reply(&self, project: &str, iid: i64, discussion: &str, author: &str, body: &str) -> i64 {
        let mut state = self.state();
        let (id, now) = (state.id(), state.now());
        let note = FakeNote {
            id,
            body: body.into(),
            system: false,
            author: author.into(),
            position: None,
            created_at: now,
        };
        let mr = state.mr(project, iid).expect("merge request");
        mr.discussions.iter_mut().find(|d| d.id == discussion).expect("discussion").notes.push(note);
        state.touch(project, iid);
        id
    }

    /// A system note ("added 1 commit"), GitLab's own.
    pub fn add_system_note(&self, project: &str, iid: i64, body: &str) {
        let mut state = self.state();
        let (id, now) = (state.id(), state.now());
        let note = FakeNote {
            id,
            body: body.into(),
            system: true,
            author: "alex".into(),
            position: None,
            created_at: now,
        };
        let d = FakeDiscussion {
            id: format!("{id:040x}"),
            resolvable: false,
            resolved: false,
            notes: vec![note],
        };
        state.mr(project, iid).expect("merge request").discussions.push(d);
    }

    pub fn fail_next(&self, fault: Fault, times: usize) {
        self.state().faults.push_back((fault, times));
    }

    /// A fault for the next `times` requests of `route` (see [`Counts`] for the names).
    pub fn fail_route(&self, route: &str, fault: Fault, times: usize) {
        self.state().route_faults.push((route.into(), fault, times));
    }

    /// `change` made to the state right after the `n`-th GraphQL request from now is answered.
    pub fn after_graphql_answers(&self, n: usize, change: impl FnOnce(&mut State) + Send + 'static) {
        self.state().after_graphql.push((n, Box::new(change)));
    }

    pub fn set_retry_after(&self, seconds: u64) {
        self.state().retry_after_secs = seconds;
    }

    /// Sends `RateLimit-Remaining` (counting down from `remaining`) and `RateLimit-Reset: reset`.
    pub fn set_rate_limit(&self, remaining: i64, reset: chrono::DateTime<chrono::Utc>) {
        self.state().rate = Some((remaining, reset.timestamp()));
    }

    /// The token's user, the author of every note the client posts (`executor-bot` unless set).
    pub fn set_username(&self, username: &str) {
        self.state().username = username.into();
    }

    /// Every note the client posted, in order (a person's, added by the test, are not among them).
    pub fn posted_notes(&self) -> Vec<PostedNote> {
        self.state().posted.clone()
    }

    pub fn set_token(&self, token: &str) {
        self.state().token = token.into();
    }

    pub fn set_scopes(&self, scopes: &[&str]) {
        self.state().scopes = scopes.iter().map(|s| s.to_string()).collect();
    }

    /// The most query complexity the fake takes (see `graphql::complexity` for how it counts).
    pub fn set_max_complexity(&self, max: u64) {
        self.state().max_complexity = max;
    }

    /// Resolving discussions is refused (403), as for a token of a user who may not.
    pub fn forbid_resolve(&self) {
        self.state().resolve_forbidden = true;
    }

    pub fn counts(&self) -> Counts {
        self.state().counts.clone()
    }

    pub fn route(&self, name: &str) -> usize {
        self.state().counts.by_route.get(name).copied().unwrap_or(0)
    }

    pub fn reset_counts(&self) {
        self.state().counts = Counts::default();
    }
}
