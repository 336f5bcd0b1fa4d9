//! The Jira side of the soak: the tests' fake Jira (Cloud), issues APP-n arriving (and edited, moved to
//! Done, reassigned), read by JQL; executor's write-back as comments, remote links and transitions
//! (In Progress, In Review, Done); and its faults: a 429 with `Retry-After`, a 500 or 503, a dropped
//! connection, and a comment carried out but answered 502.

use std::collections::BTreeMap;
use std::sync::Mutex;

use chrono::Utc;
use serde_json::{Value, json};

use crate::fake_jira::{self, FakeJira, Fault, WriteFault};
use crate::host::toml_string;
use crate::rng::Rng;
use crate::sides::{Change, SideConfig, Tracker};

const TOKEN_ENV: &str = "SOAK_JIRA_TOKEN";
const TOKEN: &str = "ATATT3x-soak-0123456789abcdef";
const EMAIL: &str = "bot@acme.com";
const PROJECT: &str = "APP";

pub struct JiraSide {
    fake: FakeJira,
    /// The issues as the soak last wrote them, and their text, by number.
    issues: Mutex<BTreeMap<u64, (Value, String)>>,
}

impl JiraSide {
    pub async fn start() -> JiraSide {
        let fake = FakeJira::start(&fake_jira::basic(EMAIL, TOKEN)).await;
        JiraSide { fake, issues: Mutex::default() }
    }
}

/// Jira's description: one paragraph of text, in Atlassian Document Format.
fn description(text: &str) -> Value {
    json!({"type": "doc", "version": 1, "content": [
        {"type": "paragraph", "content": [{"type": "text", "text": text}]},
    ]})
}

impl Tracker for JiraSide {
    fn name(&self) -> &'static str {
        "Jira"
    }

    fn config(&self) -> SideConfig {
        let toml = format!(
            "[[sources]]\nname = \"jira\"\nkind = \"jira\"\nbase_url = {}\nemail = \"{EMAIL}\"\n\
             jql = \"project = {PROJECT}\"\ntoken_env = \"{TOKEN_ENV}\"\nrepo = \"app\"\n\
             writeback = [\"approved\", \"pr_opened\", \"complete\", \"abandoned\", \"merged\"]\n\
             writeback_timeout = \"3s\"\n\
             writeback_transitions = {{ pr_opened = \"In Progress\", complete = \"In Review\", merged = \"Done\" }}\n",
            toml_string(&self.fake.url)
        );
        SideConfig { toml, repo_keys: String::new(), env: vec![(TOKEN_ENV.into(), TOKEN.into())] }
    }

    fn arrive(&self, n: u64, name: &str, notes: &str) {
        let mut issue = fake_jira::issue(n, PROJECT, name, "To Do", Utc::now());
        issue["fields"]["description"] = description(notes);
        self.fake.put_issue(issue.clone());
        self.issues.lock().unwrap_or_else(|p| p.into_inner()).insert(n, (issue, notes.to_string()));
    }

    fn change(&self, n: u64, change: Change) {
        let mut issues = self.issues.lock().unwrap_or_else(|p| p.into_inner());
        let Some((issue, notes)) = issues.get_mut(&n) else { return };
        match change {
            Change::Edited => {
                notes.push_str(" Also keep the old behaviour.");
                issue["fields"]["description"] = description(notes);
            }
            Change::Completed => issue["fields"]["status"] = fake_jira::workflow::status("Done"),
            Change::Reassigned => {
                issue["fields"]["assignee"] = json!({"accountId": "5c22b", "displayName": "Sam Roe", "emailAddress": "sam@example.com"});
            }
        }
        issue["fields"]["updated"] = json!(fake_jira::jira_time(Utc::now()));
        self.fake.put_issue(issue.clone());
    }

    /// `gid` is `jira_{id}`; executor's comments are its bot's.
    fn comments(&self, gid: &str) -> Vec<String> {
        gid.strip_prefix("jira_").map(|id| self.fake.comments(id)).unwrap_or_default()
    }

    fn request_count(&self) -> usize {
        self.fake.request_count()
    }

    fn read_fault(&self, rng: &mut Rng) -> &'static str {
        let (fault, name) = match rng.below(4) {
            0 => (Fault::Status { status: 429, retry_after: Some(1) }, "jira 429"),
            1 => (Fault::Status { status: 500, retry_after: None }, "jira 500"),
            2 => (Fault::Status { status: 503, retry_after: Some(1) }, "jira 503"),
            _ => (Fault::Reset, "jira connection dropped"),
        };
        self.fake.fail_next(fault);
        name
    }

    fn write_fault(&self) -> &'static str {
        self.fake.fail_next_write(WriteFault::AppliedThenStatus(502));
        "jira comment carried out, answered 502"
    }
}
