//! What the fake GitLab holds: projects with their merge requests (discussions, notes), pipelines and
//! jobs; the token and its scopes; faults to serve; what was asked.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::Fault;

#[derive(Debug, Clone)]
pub struct FakeMr {
    pub iid: i64,
    pub id: i64,
    pub title: String,
    pub description: String,
    /// `opened`, `merged`, `closed`.
    pub state: String,
    pub source_branch: String,
    pub target_branch: String,
    pub head_sha: String,
    pub labels: Vec<String>,
    pub conflicts: bool,
    /// GraphQL's `detailedMergeStatus` (`MERGEABLE`, `CHECKING`, …).
    pub merge_status: String,
    pub updated_at: DateTime<Utc>,
    pub discussions: Vec<FakeDiscussion>,
}

impl FakeMr {
    pub fn draft(&self) -> bool {
        let t = self.title.to_ascii_lowercase();
        t.starts_with("draft:") || t.starts_with("[draft]") || t.starts_with("(draft)")
    }

    /// Every note, in the order posted.
    pub fn notes(&self) -> Vec<FakeNote> {
        let mut notes: Vec<FakeNote> = self.discussions.iter().flat_map(|d| d.notes.clone()).collect();
        notes.sort_by_key(|n| n.id);
        notes
    }
}

#[derive(Debug, Clone)]
pub struct FakeDiscussion {
    pub id: String,
    pub resolvable: bool,
    pub resolved: bool,
    pub notes: Vec<FakeNote>,
}

#[derive(Debug, Clone)]
pub struct FakeNote {
    pub id: i64,
    pub body: String,
    pub system: bool,
    pub author: String,
    pub position: Option<(String, i64)>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub struct FakePipeline {
    pub id: i64,
    pub iid: i64,
    pub sha: String,
    pub reference: String,
    pub jobs: Vec<FakeJob>,
}

#[derive(Debug, Clone)]
pub struct FakeJob {
    pub id: i64,
    pub name: String,
    /// GraphQL's `CiJobStatus`: `RUNNING`, `FAILED`, `SUCCESS`, …
    pub status: String,
    pub allow_failure: bool,
    pub trace: String,
}

impl FakePipeline {
    pub fn status(&self) -> &'static str {
        let any = |s: &str| self.jobs.iter().any(|j| j.status == s);
        if self
            .jobs
            .iter()
            .any(|j| !matches!(j.status.as_str(), "SUCCESS" | "FAILED" | "CANCELED" | "SKIPPED" | "MANUAL"))
        {
            "RUNNING"
        } else if self.jobs.iter().any(|j| j.status == "FAILED" && !j.allow_failure) {
            "FAILED"
        } else if any("CANCELED") {
            "CANCELED"
        } else {
            "SUCCESS"
        }
    }
}

#[derive(Debug, Default)]
pub struct Project {
    pub path: String,
    pub bare: Option<PathBuf>,
    pub mrs: Vec<FakeMr>,
    pub pipelines: Vec<FakePipeline>,
    /// Branch heads last read from the bare repository.
    pub branches: BTreeMap<String, String>,
    /// The jobs of the pipelines the next pushes start (one entry per new head), as GitLab runs
    /// `.gitlab-ci.yml` on a push.
    pub plan: VecDeque<Vec<(String, String)>>,
    /// The jobs of a pipeline nothing was planned for ([`super::FakeGitLab::set_default_pipeline`]).
    pub default_pipeline: Option<Vec<(String, String)>>,
    /// New heads still to start no pipeline.
    pub skip_pushes: usize,
}

impl Project {
    /// The jobs of the pipeline a new head starts, if it starts one.
    pub fn push_pipeline(&mut self) -> Option<Vec<(String, String)>> {
        if self.skip_pushes > 0 {
            self.skip_pushes -= 1;
            return None;
        }
        self.created_pipeline()
    }

    /// The jobs of a pipeline started by a push or created through the API: the plan's next, else the
    /// default.
    pub fn created_pipeline(&mut self) -> Option<Vec<(String, String)>> {
        self.plan.pop_front().or_else(|| self.default_pipeline.clone())
    }
}

/// A note the client posted: on merge request `iid`, through `route` (`note_create`,
/// `discussion_create`, `discussion_note_create`), in `discussion` when it replied to one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostedNote {
    pub project: String,
    pub iid: i64,
    pub route: &'static str,
    pub discussion: Option<String>,
    pub body: String,
}

/// What the client asked for: REST and GraphQL requests, by route (`mr_list`, `mr_create`, `mr_update`,
/// `note_create`, `discussion_create`, `discussion_note_create`, `discussion_resolve`, `job_trace`,
/// `pipeline_create`, `pipeline_retry`, `token_self`, `graphql`, `not_found`), and faults served.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub rest: usize,
    pub graphql: usize,
    pub by_route: BTreeMap<String, usize>,
    pub faults: BTreeMap<String, usize>,
}

pub type AfterGraphql = Box<dyn FnOnce(&mut State) + Send>;

pub struct State {
    pub token: String,
    pub scopes: Vec<String>,
    /// The token's user: the author of every note the client posts.
    pub username: String,
    pub projects: BTreeMap<String, Project>,
    pub next_id: i64,
    pub faults: VecDeque<(Fault, usize)>,
    pub route_faults: Vec<(String, Fault, usize)>,
    /// Changes made to the state once that many more GraphQL requests were answered: the world moving
    /// on between two requests of one observation.
    pub after_graphql: Vec<(usize, AfterGraphql)>,
    pub counts: Counts,
    pub retry_after_secs: u64,
    /// `RateLimit-Remaining` to send (and count down), and `RateLimit-Reset` (Unix seconds); `None`:
    /// no rate-limit headers.
    pub rate: Option<(i64, i64)>,
    pub resolve_forbidden: bool,
    /// The most query complexity the fake takes: no limit unless a test sets one.
    pub max_complexity: u64,
    pub last_time: DateTime<Utc>,
    pub posted: Vec<PostedNote>,
}

impl State {
    pub fn new() -> State {
        State {
            token: "glpat-fake-token".into(),
            scopes: vec!["api".into()],
            username: "executor-bot".into(),
            projects: BTreeMap::new(),
            next_id: 100,
            faults: VecDeque::new(),
            route_faults: Vec::new(),
            after_graphql: Vec::new(),
            counts: Counts::default(),
            retry_after_secs: 1,
            rate: None,
            resolve_forbidden: false,
            max_complexity: u64::MAX,
            last_time: Utc::now(),
            posted: Vec::new(),
        }
    }

    pub fn id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// Now, strictly later than any time given before (GitLab's times have milliseconds).
    pub fn now(&mut self) -> DateTime<Utc> {
        let now = Utc::now().max(self.last_time + chrono::TimeDelta::milliseconds(1));
        self.last_time = now;
        now
    }

    pub fn project(&mut self, path: &str) -> Option<&mut Project> {
        self.projects.get_mut(path)
    }

    pub fn mr(&mut self, path: &str, iid: i64) -> Option<&mut FakeMr> {
        self.projects.get_mut(path)?.mrs.iter_mut().find(|m| m.iid == iid)
    }

    pub fn touch(&mut self, path: &str, iid: i64) {
        let now = self.now();
        if let Some(mr) = self.mr(path, iid) {
            mr.updated_at = now;
        }
    }

    /// A pipeline at `sha` on `reference` with these jobs (name, status); its id.
    pub fn add_pipeline(&mut self, path: &str, sha: &str, reference: &str, jobs: &[(String, String)]) -> i64 {
        let id = self.id();
        let jobs = jobs
            .iter()
            .map(|(name, status)| FakeJob {
                id: self.id(),
                name: name.clone(),
                status: status.clone(),
                allow_failure: false,
                trace: format!("Running {name}\n$ make {name}\n{name}: {status}\n"),
            })
            .collect();
        let Some(project) = self.project(path) else { return 0 };
        let iid = project.pipelines.len() as i64 + 1;
        project.pipelines.push(FakePipeline { id, iid, sha: sha.into(), reference: reference.into(), jobs });
        id
    }

    pub fn job_mut(&mut self, job_id: i64) -> Option<&mut FakeJob> {
        self.projects
            .values_mut()
            .flat_map(|p| p.pipelines.iter_mut())
            .flat_map(|p| p.jobs.iter_mut())
            .find(|j| j.id == job_id)
    }

    /// The merge request as GraphQL shows it, every field the forge may ask for.
    pub fn mr_json(&self, base: &str, project: &Project, mr: &FakeMr) -> Value {
        let pipeline = project.pipelines.iter().rev().find(|p| p.sha == mr.head_sha);
        let head_pipeline = pipeline.map(|p| {
            json!({
                "id": format!("gid://gitlab/Ci::Pipeline/{}", p.id),
                "iid": p.iid.to_string(),
                "status": p.status(),
                "sha": p.sha,
                "jobs": { "nodes": p.jobs.iter().map(|j| json!({
                    "id": format!("gid://gitlab/Ci::Build/{}", j.id),
                    "name": j.name,
                    "status": j.status,
                    "allowFailure": j.allow_failure,
                    "webPath": format!("/{}/-/jobs/{}", project.path, j.id),
                })).collect::<Vec<_>>() },
            })
        });
        let note = |n: &FakeNote| {
            json!({
                "id": format!("gid://gitlab/{}/{}", if n.position.is_some() { "DiffNote" } else { "Note" }, n.id),
                "body": n.body,
                "system": n.system,
                "author": { "username": n.author },
                "position": n.position.as_ref().map(|(path, line)| json!({ "newPath": path, "newLine": line })),
                "createdAt": n.created_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            })
        };
        let discussion = |d: &FakeDiscussion| {
            json!({
                "id": format!("gid://gitlab/Discussion/{}", d.id),
                "resolvable": d.resolvable,
                "resolved": d.resolved,
            })
        };
        let discussions: Vec<Value> = mr
            .discussions
            .iter()
            .map(|d| {
                let mut value = discussion(d);
                value["notes"] = json!({ "nodes": d.notes.iter().map(note).collect::<Vec<_>>() });
                value
            })
            .collect();
        // `notes`: every note of every discussion, oldest first, each naming its discussion.
        let mut notes: Vec<(i64, Value)> = mr
            .discussions
            .iter()
            .flat_map(|d| {
                d.notes.iter().map(move |n| {
                    let mut value = note(n);
                    value["discussion"] = discussion(d);
                    (n.id, value)
                })
            })
            .collect();
        notes.sort_by_key(|(id, _)| *id);
        json!({
            "iid": mr.iid.to_string(),
            "id": format!("gid://gitlab/MergeRequest/{}", mr.id),
            "state": mr.state,
            "draft": mr.draft(),
            "title": mr.title,
            "webUrl": format!("{base}/{}/-/merge_requests/{}", project.path, mr.iid),
            "sourceBranch": mr.source_branch,
            "targetBranch": mr.target_branch,
            "diffHeadSha": mr.head_sha,
            // GraphQL's `Time` has whole seconds; REST's `updated_at` has milliseconds.
            "updatedAt": mr.updated_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "conflicts": mr.conflicts,
            "detailedMergeStatus": mr.merge_status,
            "diffRefs": { "baseSha": "base000", "headSha": mr.head_sha, "startSha": "base000" },
            "diffStatsSummary": { "additions": 3, "deletions": 1, "fileCount": 1 },
            "labels": { "nodes": mr.labels.iter().map(|l| json!({ "title": l })).collect::<Vec<_>>() },
            "headPipeline": head_pipeline,
            "discussions": { "nodes": discussions },
            "notes": { "nodes": notes.into_iter().map(|(_, n)| n).collect::<Vec<_>>() },
        })
    }

    /// The merge request as REST shows it.
    pub fn mr_rest(&self, base: &str, project: &Project, mr: &FakeMr) -> Value {
        json!({
            "id": mr.id,
            "iid": mr.iid,
            "title": mr.title,
            "description": mr.description,
            "state": mr.state,
            "draft": mr.draft(),
            "source_branch": mr.source_branch,
            "target_branch": mr.target_branch,
            "sha": mr.head_sha,
            "labels": mr.labels,
            "updated_at": mr.updated_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "web_url": format!("{base}/{}/-/merge_requests/{}", project.path, mr.iid),
        })
    }
}
