//! The Asana side of the soak: the tests' fake Asana, tasks arriving in one project (and edited,
//! completed, reassigned there), executor's comments as stories, and its faults: a 429 with
//! `Retry-After`, a 500 or 503, a body that is not JSON, and a comment carried out but answered 502.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::fake_asana::{self, FakeAsana, Fault, WriteFault};
use crate::host::toml_string;
use crate::rng::Rng;
use crate::sides::{Change, SideConfig, Tracker};

const TOKEN_ENV: &str = "SOAK_ASANA_TOKEN";
const TOKEN: &str = "soak-asana-token-0123456789";
const PROJECT: &str = "1200000000000001";

pub struct AsanaSide {
    fake: FakeAsana,
    /// The tasks as the soak last wrote them, by number.
    tasks: Mutex<BTreeMap<u64, Value>>,
}

/// Asana's clock in its own format (milliseconds, `Z`).
fn asana_now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

impl AsanaSide {
    pub async fn start() -> AsanaSide {
        AsanaSide { fake: FakeAsana::start(TOKEN).await, tasks: Mutex::default() }
    }
}

impl Tracker for AsanaSide {
    fn name(&self) -> &'static str {
        "Asana"
    }

    fn config(&self) -> SideConfig {
        let toml = format!(
            "[[sources]]\nname = \"asana_inbox\"\nkind = \"asana\"\napi_url = {}\ntoken_env = \"{TOKEN_ENV}\"\n\
             projects = [\"{PROJECT}\"]\nrepo = \"app\"\n",
            toml_string(&self.fake.url)
        );
        SideConfig { toml, repo_keys: String::new(), env: vec![(TOKEN_ENV.into(), TOKEN.into())] }
    }

    fn arrive(&self, n: u64, name: &str, notes: &str) {
        let gid = format!("{}", 1_300_000_000_000_000u64 + n);
        let mut task = fake_asana::task(&gid, name, &asana_now());
        task["notes"] = json!(notes);
        self.fake.set_project_task(PROJECT, task.clone());
        self.tasks.lock().unwrap_or_else(|p| p.into_inner()).insert(n, task);
    }

    fn change(&self, n: u64, change: Change) {
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        let Some(task) = tasks.get_mut(&n) else { return };
        match change {
            Change::Edited => {
                let notes = task["notes"].as_str().unwrap_or_default().to_string();
                task["notes"] = json!(format!("{notes} Also keep the old behaviour."));
            }
            Change::Completed => task["completed"] = json!(true),
            Change::Reassigned => {
                task["assignee"] = json!({"gid": "78", "resource_type": "user", "name": "Sam Roe"});
            }
        }
        task["modified_at"] = json!(asana_now());
        self.fake.set_project_task(PROJECT, task.clone());
    }

    fn comments(&self, gid: &str) -> Vec<String> {
        self.fake.comments(gid)
    }

    fn request_count(&self) -> usize {
        self.fake.request_count()
    }

    fn read_fault(&self, rng: &mut Rng) -> &'static str {
        let (fault, name) = match rng.below(4) {
            0 => (Fault::TooMany { retry_after: 1 }, "asana 429"),
            1 => (Fault::Status(500), "asana 500"),
            2 => (Fault::Status(503), "asana 503"),
            _ => (Fault::Body(b"<html>upstream error</html>"), "asana not json"),
        };
        self.fake.fail_next(fault);
        name
    }

    fn write_fault(&self) -> &'static str {
        self.fake.fail_next_write(WriteFault::AppliedThenStatus(502));
        "asana comment carried out, answered 502"
    }
}
