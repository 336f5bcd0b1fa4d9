//! What a forge remembers between processes (`executor_forge_cache`): opaque text by repository and key,
//! so that a runner cron starts every few minutes starts where the last one stopped, and every process
//! sharing a token honours the same rate-limit blocks. The forge decides what the values mean.

use super::{BeginWrite, Result, Store, now, on_pool};

impl Store {
    /// Everything remembered for `repo`, as (key, value) pairs in key order.
    pub async fn forge_memory(&self, repo: &str) -> Result<Vec<(String, String)>> {
        Ok(on_pool!(self, |p| {
            sqlx::query_as::<_, (String, String)>(
                "SELECT key, value FROM executor_forge_cache WHERE repo = $1 ORDER BY key",
            )
            .bind(repo)
            .fetch_all(p)
            .await?
        }))
    }

    /// One remembered value, `None` when there is none.
    pub async fn forge_memory_entry(&self, repo: &str, key: &str) -> Result<Option<String>> {
        Ok(on_pool!(self, |p| {
            sqlx::query_scalar::<_, String>(
                "SELECT value FROM executor_forge_cache WHERE repo = $1 AND key = $2",
            )
            .bind(repo)
            .bind(key)
            .fetch_optional(p)
            .await?
        }))
    }

    /// Remembers each (key, value) for `repo`, replacing what was there, all in one transaction.
    pub async fn remember_in_forge_memory(&self, repo: &str, entries: &[(String, String)]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let at = now();
        on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            for (key, value) in entries {
                sqlx::query(
                    "INSERT INTO executor_forge_cache (repo, key, value, updated_at) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (repo, key) DO UPDATE SET value = $3, updated_at = $4",
                )
                .bind(repo)
                .bind(key)
                .bind(value)
                .bind(at)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    /// Forgets these keys of `repo` (those not there are no error).
    pub async fn forget_in_forge_memory(&self, repo: &str, keys: &[String]) -> Result<()> {
        on_pool!(self, |p| {
            for key in keys {
                sqlx::query("DELETE FROM executor_forge_cache WHERE repo = $1 AND key = $2")
                    .bind(repo)
                    .bind(key)
                    .execute(p)
                    .await?;
            }
        });
        Ok(())
    }
}
