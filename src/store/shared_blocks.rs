//! Rate-limit blocks kept in the database (beside the forges' memory, under a scope naming the API: see
//! [`crate::shared_blocks::github_scope`]), so that every process calling one GitHub or one GitLab
//! instance — on any host sharing the database — honours a block any of them was given.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::Store;
use crate::shared_blocks::{SharedBlock, SharedBlocks};

const BLOCK: &str = "rate_block";

impl Store {
    /// The blocks of one API (`scope`), kept in this database.
    pub fn shared_blocks(&self, scope: String) -> Arc<dyn SharedBlocks> {
        Arc::new(StoredBlocks { store: self.clone(), scope })
    }
}

struct StoredBlocks {
    store: Store,
    scope: String,
}

impl StoredBlocks {
    async fn current(&self) -> Option<SharedBlock> {
        match self.store.forge_memory_entry(&self.scope, BLOCK).await {
            Ok(value) => value.and_then(|v| serde_json::from_str(&v).ok()),
            Err(e) => {
                tracing::warn!(scope = %self.scope, "reading the shared rate-limit block: {e}");
                None
            }
        }
    }
}

impl SharedBlocks for StoredBlocks {
    fn read(&self) -> BoxFuture<'_, Option<SharedBlock>> {
        Box::pin(self.current())
    }

    fn write(&self, block: SharedBlock) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if self.current().await.is_some_and(|kept| kept.until >= block.until) {
                return;
            }
            let Ok(value) = serde_json::to_string(&block) else { return };
            let entry = [(BLOCK.to_string(), value)];
            if let Err(e) = self.store.remember_in_forge_memory(&self.scope, &entry).await {
                tracing::warn!(scope = %self.scope, "sharing the rate-limit block: {e}");
            }
        })
    }
}
