//! The fake GitLab's REST routes under `/api/v4`, in GitLab's documented shapes.

use axum::http::Method;
use serde_json::{Value, json};

use super::server::Answer;
use super::state::{FakeDiscussion, FakeMr, FakeNote, PostedNote, State};

/// A request's route: its name (for counting and route faults) and what it names.
pub struct Route {
    pub name: &'static str,
    segments: Vec<String>,
}

pub fn route(method: &Method, path: &str) -> Route {
    let segments: Vec<String> = path
        .trim_start_matches("/api/v4/")
        .split('/')
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let s: Vec<&str> = segments.iter().map(String::as_str).collect();
    let name = match (method.as_str(), s.as_slice()) {
        ("GET", ["personal_access_tokens", "self"]) => "token_self",
        ("GET", ["projects", _, "merge_requests"]) => "mr_list",
        ("POST", ["projects", _, "merge_requests"]) => "mr_create",
        ("PUT", ["projects", _, "merge_requests", _]) => "mr_update",
        ("POST", ["projects", _, "merge_requests", _, "notes"]) => "note_create",
        ("POST", ["projects", _, "merge_requests", _, "discussions"]) => "discussion_create",
        ("POST", ["projects", _, "merge_requests", _, "discussions", _, "notes"]) => "discussion_note_create",
        ("PUT", ["projects", _, "merge_requests", _, "discussions", _]) => "discussion_resolve",
        ("GET", ["projects", _, "jobs", _, "trace"]) => "job_trace",
        ("POST", ["projects", _, "pipeline"]) => "pipeline_create",
        ("POST", ["projects", _, "pipelines", _, "retry"]) => "pipeline_retry",
        _ => "not_found",
    };
    Route { name, segments }
}

fn query_value(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| percent_encoding::percent_decode_str(v).decode_utf8_lossy().into_owned())
    })
}

pub fn handle(state: &mut State, base: &str, route: &Route, query: &str, body: &[u8]) -> Answer {
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let s = &route.segments;
    if route.name == "token_self" {
        return Answer::json(
            200,
            json!({ "id": 1, "name": "executor", "scopes": state.scopes, "active": true, "revoked": false }),
        );
    }
    if route.name == "not_found" {
        return Answer::message(404, "404 Not Found");
    }
    let path = s[1].clone();
    if !state.projects.contains_key(&path) {
        return Answer::message(404, "404 Project Not Found");
    }
    let iid = s.get(3).and_then(|i| i.parse::<i64>().ok()).unwrap_or(0);
    let author = state.username.clone();
    match route.name {
        "mr_list" => {
            let project = &state.projects[&path];
            let st = query_value(query, "state").unwrap_or_else(|| "all".into());
            let branch = query_value(query, "source_branch");
            let after = query_value(query, "updated_after")
                .and_then(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok());
            let per_page = query_value(query, "per_page").and_then(|p| p.parse().ok()).unwrap_or(20usize);
            let mut mrs: Vec<&FakeMr> = project
                .mrs
                .iter()
                .filter(|m| st == "all" || m.state == st)
                .filter(|m| branch.as_ref().is_none_or(|b| &m.source_branch == b))
                .filter(|m| after.is_none_or(|a| m.updated_at > a))
                .collect();
            mrs.sort_by_key(|m| std::cmp::Reverse(m.updated_at));
            let list: Vec<Value> =
                mrs.iter().take(per_page).map(|m| state.mr_rest(base, project, m)).collect();
            Answer::json(200, Value::Array(list))
        }
        "mr_create" => {
            let branch = body["source_branch"].as_str().unwrap_or_default().to_string();
            let project = &state.projects[&path];
            if project.mrs.iter().any(|m| m.source_branch == branch && m.state == "opened") {
                return Answer::message(
                    409,
                    "Another open merge request already exists for this source branch",
                );
            }
            let Some(head) = project.branches.get(&branch).cloned() else {
                return Answer::message(400, "Source branch does not exist");
            };
            let (id, now) = (state.id(), state.now());
            let project = state.project(&path).unwrap();
            let mr = FakeMr {
                iid: project.mrs.len() as i64 + 1,
                id,
                title: body["title"].as_str().unwrap_or_default().into(),
                description: body["description"].as_str().unwrap_or_default().into(),
                state: "opened".into(),
                source_branch: branch,
                target_branch: body["target_branch"].as_str().unwrap_or("main").into(),
                head_sha: head,
                labels: Vec::new(),
                conflicts: false,
                merge_status: "MERGEABLE".into(),
                updated_at: now,
                discussions: Vec::new(),
            };
            project.mrs.push(mr.clone());
            let project = &state.projects[&path];
            Answer::json(201, state.mr_rest(base, project, &mr))
        }
        "mr_update" => {
            let Some(mr) = state.mr(&path, iid) else { return Answer::message(404, "404 Not found") };
            if let Some(title) = body["title"].as_str() {
                mr.title = title.into();
            }
            for label in body["add_labels"].as_str().unwrap_or_default().split(',').filter(|l| !l.is_empty())
            {
                if !mr.labels.iter().any(|l| l == label) {
                    mr.labels.push(label.into());
                }
            }
            state.touch(&path, iid);
            let mr = state.projects[&path].mrs.iter().find(|m| m.iid == iid).unwrap();
            Answer::json(200, state.mr_rest(base, &state.projects[&path], mr))
        }
        "note_create" | "discussion_create" | "discussion_note_create" => {
            let Some(text) = body["body"].as_str().map(str::to_string) else {
                return Answer::message(400, "body is missing");
            };
            let position = body.get("position").filter(|p| p.is_object()).map(|p| {
                (p["new_path"].as_str().unwrap_or_default().to_string(), p["new_line"].as_i64().unwrap_or(0))
            });
            if position.as_ref().is_some_and(|(_, line)| *line > 1000) {
                return Answer::message(
                    400,
                    "Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}",
                );
            }
            let (id, now) = (state.id(), state.now());
            let note = FakeNote { id, body: text, system: false, author, position, created_at: now };
            let discussion_id = format!("{:040x}", id);
            let Some(mr) = state.mr(&path, iid) else { return Answer::message(404, "404 Not found") };
            let answer = match route.name {
                "discussion_note_create" => {
                    let Some(d) = mr.discussions.iter_mut().find(|d| d.id == s[5]) else {
                        return Answer::message(404, "404 Discussion Not Found");
                    };
                    d.notes.push(note.clone());
                    note_json(&note)
                }
                "discussion_create" => {
                    let d = FakeDiscussion {
                        id: discussion_id.clone(),
                        resolvable: true,
                        resolved: false,
                        notes: vec![note.clone()],
                    };
                    mr.discussions.push(d);
                    json!({ "id": discussion_id, "individual_note": false, "notes": [note_json(&note)] })
                }
                _ => {
                    let d = FakeDiscussion {
                        id: discussion_id,
                        resolvable: false,
                        resolved: false,
                        notes: vec![note.clone()],
                    };
                    mr.discussions.push(d);
                    note_json(&note)
                }
            };
            let discussion = (route.name == "discussion_note_create").then(|| s[5].clone());
            let posted =
                PostedNote { project: path.clone(), iid, route: route.name, discussion, body: note.body };
            state.posted.push(posted);
            state.touch(&path, iid);
            Answer::json(201, answer)
        }
        "discussion_resolve" => {
            if state.resolve_forbidden {
                return Answer::message(403, "403 Forbidden");
            }
            let resolved = query_value(query, "resolved").as_deref() == Some("true");
            let Some(mr) = state.mr(&path, iid) else { return Answer::message(404, "404 Not found") };
            let Some(d) = mr.discussions.iter_mut().find(|d| d.id == s[5]) else {
                return Answer::message(404, "404 Discussion Not Found");
            };
            d.resolved = resolved;
            let id = d.id.clone();
            state.touch(&path, iid);
            Answer::json(200, json!({ "id": id, "resolved": resolved }))
        }
        "job_trace" => {
            let job = s[3].parse::<i64>().unwrap_or(0);
            match state.job_mut(job) {
                Some(j) => Answer::text(200, j.trace.clone()),
                None => Answer::message(404, "404 Job Not Found"),
            }
        }
        "pipeline_create" => {
            let reference = query_value(query, "ref").unwrap_or_default();
            let Some(sha) = state.projects[&path].branches.get(&reference).cloned() else {
                return Answer::message(400, "Reference not found");
            };
            let jobs = state
                .project(&path)
                .unwrap()
                .created_pipeline()
                .unwrap_or_else(|| vec![("test".into(), "PENDING".into())]);
            let id = state.add_pipeline(&path, &sha, &reference, &jobs);
            Answer::json(201, json!({ "id": id, "sha": sha, "ref": reference, "status": "pending" }))
        }
        "pipeline_retry" => {
            let id = s[3].parse::<i64>().unwrap_or(0);
            let Some(p) = state.project(&path).unwrap().pipelines.iter_mut().find(|p| p.id == id) else {
                return Answer::message(404, "404 Not found");
            };
            for j in p.jobs.iter_mut().filter(|j| matches!(j.status.as_str(), "FAILED" | "CANCELED")) {
                j.status = "PENDING".into();
            }
            Answer::json(201, json!({ "id": id, "status": "running" }))
        }
        _ => Answer::message(404, "404 Not Found"),
    }
}

fn note_json(note: &FakeNote) -> Value {
    json!({
        "id": note.id,
        "body": note.body,
        "system": note.system,
        "author": { "username": note.author },
        "created_at": note.created_at.to_rfc3339(),
    })
}
