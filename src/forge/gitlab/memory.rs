//! What the GitLab forge keeps in the database (`Store::forge_memory`, under the repository's name) so
//! that a runner cron starts begins warm: the last followed listing's newest change, and the last
//! observation of each merge request, with the listed `updated_at` it was taken at.
//!
//! Processes (the runner, `executor comment` run by agents) write what they observed in one transaction
//! each, and an observation a listing showed out of date is written as forgotten (an empty value) in
//! that same transaction: whichever process writes last, a kept observation is never older than the
//! kept listing says it is (a later writer's older listing only makes the next listing reach further
//! back).

use super::{GitLabForge, Observed};
use crate::forge::ForgeError;

const NEWEST: &str = "gitlab:newest";
const MR: &str = "gitlab:mr:";

impl GitLabForge {
    /// Reads what an earlier process kept, once per forge.
    pub(super) async fn load_memory(&self) -> Result<(), ForgeError> {
        self.memory_loaded.get_or_try_init(|| self.read_memory()).await.map(|_| ())
    }

    async fn read_memory(&self) -> Result<(), ForgeError> {
        for (key, value) in self.store.forge_memory(&self.repo_name).await? {
            if key == NEWEST {
                if let (Ok(at), Ok(mut listed)) = (value.parse(), self.listed.lock()) {
                    listed.newest = listed.newest.max(Some(at));
                }
            } else if let Some(iid) = key.strip_prefix(MR).and_then(|n| n.parse::<i64>().ok())
                // Forgotten (empty), or an older build's that does not read: asked again.
                && let Ok(observed) = serde_json::from_str::<Observed>(&value)
                && let Ok(mut cache) = self.cache.lock()
            {
                cache.entry(iid).or_insert(observed);
            }
        }
        Ok(())
    }

    /// Keeps these observations, forgets the `stale` ones, and keeps the listing's newest change, in one
    /// transaction.
    pub(super) async fn keep(
        &self,
        observed: &[(i64, Observed)],
        stale: &[i64],
        newest: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<(), ForgeError> {
        let mut entries = Vec::new();
        for (iid, o) in observed {
            let value = serde_json::to_string(o)
                .map_err(|e| ForgeError::Config(format!("cannot keep the forge's memory: {e}")))?;
            entries.push((format!("{MR}{iid}"), value));
        }
        entries.extend(stale.iter().map(|iid| (format!("{MR}{iid}"), String::new())));
        if let Some(at) = newest {
            entries.push((NEWEST.to_string(), at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)));
        }
        Ok(self.store.remember_in_forge_memory(&self.repo_name, &entries).await?)
    }

    /// Forgets what is kept of these merge requests (merged or closed: no run watches them again).
    pub(super) async fn forget_finished(&self, iids: &[i64]) -> Result<(), ForgeError> {
        if iids.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = iids.iter().map(|iid| format!("{MR}{iid}")).collect();
        Ok(self.store.forget_in_forge_memory(&self.repo_name, &keys).await?)
    }
}
