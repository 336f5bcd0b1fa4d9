//! What the GitHub forge keeps in the database (`Store::forge_memory`) so that a runner cron starts
//! begins warm: the pull-request listing's ETag, page and newest change, the last observation of each
//! pull request, the pull requests GitHub keeps answering with an error (since when, for
//! `runner.check_timeout`). Rate-limit blocks, shared by every process on the token, are kept by
//! `forge::stored_blocks`.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::{GitHubForge, Observed};
use crate::forge::{ForgeError, Unobserved};

const ETAG: &str = "etag:pulls";
const LISTED_UP_TO: &str = "listed_up_to";
const LISTED_PAGE: &str = "listed_page";
const PR: &str = "pr:";
const UNOBSERVED: &str = "unobserved:";

impl GitHubForge {
    /// Reads what an earlier process kept, once per forge.
    pub(super) async fn load_memory(&self) -> Result<(), ForgeError> {
        self.memory_loaded.get_or_try_init(|| self.read_memory()).await.map(|_| ())
    }

    async fn read_memory(&self) -> Result<(), ForgeError> {
        for (key, value) in self.store.forge_memory(&self.repo_name).await? {
            let number = |prefix: &str| key.strip_prefix(prefix).and_then(|n| n.parse::<i64>().ok());
            if key == ETAG {
                self.client.set_etag(&self.pulls_path(), &value);
            } else if key == LISTED_UP_TO {
                if let (Ok(at), Ok(mut up_to)) = (value.parse::<DateTime<Utc>>(), self.listed_up_to.lock()) {
                    *up_to = Some(at);
                }
            } else if key == LISTED_PAGE {
                if let (Ok(page), Ok(mut kept)) = (serde_json::from_str(&value), self.listed_page.lock()) {
                    *kept = page;
                }
            } else if let Some(n) = number(PR) {
                // One that does not read (an older build's) is asked again, as if never seen.
                if let Ok(observed) = serde_json::from_str::<Observed>(&value)
                    && let Ok(mut cache) = self.cache.lock()
                {
                    cache.entry(n).or_insert(observed);
                }
            } else if let Some(n) = number(UNOBSERVED)
                && let Ok(failing) = serde_json::from_str::<Unobserved>(&value)
                && let Ok(mut map) = self.failing.lock()
            {
                map.entry(n).or_insert(failing);
            }
        }
        Ok(())
    }

    /// Keeps the listing that every pull request it announced was observed after: its ETag with the
    /// page it answered (one transaction, so a process that reads them reads the two together).
    pub(super) async fn keep_listing(&self) -> Result<(), ForgeError> {
        let mut entries = Vec::new();
        if let Some(etag) = self.client.etag(&self.pulls_path()) {
            entries.push((ETAG.to_string(), etag));
        }
        if let Some(at) = self.listed_up_to.lock().ok().and_then(|up_to| *up_to) {
            entries.push((LISTED_UP_TO.to_string(), at.to_rfc3339()));
        }
        if let Ok(page) = self.listed_page.lock() {
            entries.push((LISTED_PAGE.to_string(), serde_json::to_string(&*page).map_err(json_error)?));
        }
        Ok(self.store.remember_in_forge_memory(&self.repo_name, &entries).await?)
    }

    /// Keeps these observations (those that differ from what is kept: see [`Observed::same_as`]).
    pub(super) async fn keep_observed(&self, observed: &[(i64, Observed)]) -> Result<(), ForgeError> {
        let mut entries = Vec::new();
        for (number, o) in observed {
            entries.push((format!("{PR}{number}"), serde_json::to_string(o).map_err(json_error)?));
        }
        Ok(self.store.remember_in_forge_memory(&self.repo_name, &entries).await?)
    }

    /// Keeps which pull requests failed (since when) and forgets those observed again.
    pub(super) async fn keep_failures(
        &self,
        failed: &HashMap<i64, Unobserved>,
        recovered: &[i64],
    ) -> Result<(), ForgeError> {
        let mut entries = Vec::new();
        for (number, u) in failed {
            entries.push((format!("{UNOBSERVED}{number}"), serde_json::to_string(u).map_err(json_error)?));
        }
        self.store.remember_in_forge_memory(&self.repo_name, &entries).await?;
        let gone: Vec<String> = recovered.iter().map(|n| format!("{UNOBSERVED}{n}")).collect();
        Ok(self.store.forget_in_forge_memory(&self.repo_name, &gone).await?)
    }
}

impl GitHubForge {
    /// Forgets the kept observations of these pull requests: they changed since, unobserved here.
    pub(super) async fn forget_kept_observations(&self, numbers: &[i64]) -> Result<(), ForgeError> {
        if numbers.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = numbers.iter().map(|n| format!("{PR}{n}")).collect();
        Ok(self.store.forget_in_forge_memory(&self.repo_name, &keys).await?)
    }

    /// Forgets what is kept of these pull requests (merged or closed: no run watches them again).
    pub(super) async fn forget_finished(&self, numbers: &[i64]) -> Result<(), ForgeError> {
        if numbers.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> =
            numbers.iter().flat_map(|n| [format!("{PR}{n}"), format!("{UNOBSERVED}{n}")]).collect();
        Ok(self.store.forget_in_forge_memory(&self.repo_name, &keys).await?)
    }
}

fn json_error(e: serde_json::Error) -> ForgeError {
    ForgeError::Config(format!("cannot keep the forge's memory: {e}"))
}
