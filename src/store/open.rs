//! Connecting: SQLite (the embedded default) or PostgreSQL, chosen by the URL's scheme.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::{Pool, Result, Store, StoreError};

impl Store {
    /// Opens `url`: `postgres://…` / `postgresql://…` for PostgreSQL, `sqlite://PATH` or a plain path for
    /// SQLite (the file and its directory are created if missing). Does not migrate: see `migrate`.
    pub async fn open(url: &str) -> Result<Store> {
        let shown = redact_url(url);
        let open_err = |source| StoreError::Open { url: shown.clone(), source };
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let options = PgConnectOptions::from_str(url).map_err(open_err)?;
            let pool = PgPoolOptions::new()
                .max_connections(8)
                .acquire_timeout(Duration::from_secs(15))
                .connect_with(options)
                .await
                .map_err(open_err)?;
            return Ok(Store { pool: Pool::Postgres(pool) });
        }
        let path = url.strip_prefix("sqlite://").unwrap_or(url);
        Self::open_sqlite(Path::new(path)).await.map_err(|e| match e {
            StoreError::Db(source) => open_err(source),
            other => other,
        })
    }

    async fn open_sqlite(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Db(sqlx::Error::Io(e)))?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            // WAL lets readers (the dashboard, `executor status`) run while the runner writes.
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            // Several processes (runner, analyzer, CLI) share the file: wait for the lock, don't fail.
            .busy_timeout(Duration::from_secs(30))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new().max_connections(4).connect_with(options).await?;
        Ok(Store { pool: Pool::Sqlite(pool) })
    }
}

/// The URL with any password replaced, for messages and logs.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_string();
    };
    match userinfo.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact_url("postgres://bob:s3cret@db:5432/x"), "postgres://bob:***@db:5432/x");
        assert_eq!(redact_url("postgres://bob@db/x"), "postgres://bob@db/x");
        assert_eq!(redact_url("/tmp/a.db"), "/tmp/a.db");
    }
}
