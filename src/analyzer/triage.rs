//! PLACEHOLDER until the triage lands (helper branch gh-triage): same API.
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use crate::config::Config;
use crate::domain::Task;
use crate::store::{Store, StoreError};
use crate::worker::Prompts;

#[derive(Clone)]
pub struct Triager {
    _config: Arc<Config>,
}

impl Triager {
    pub fn new(config: Arc<Config>, _p: Arc<Prompts>, _s: Store, _h: String, _e: Option<PathBuf>) -> Triager {
        Triager { _config: config }
    }
    pub async fn triage(
        &self,
        _task: &Task,
        _notes: &[String],
        _stop: watch::Receiver<bool>,
    ) -> TriageOutcome {
        TriageOutcome::Failed("not yet".into())
    }
    pub async fn stop_orphans(&self) -> Result<usize, StoreError> {
        Ok(0)
    }
}

pub enum TriageOutcome {
    Decided(crate::store::Triage),
    Failed(String),
    Blocked(String),
}
