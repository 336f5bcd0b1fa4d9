//! Connecting: SQLite (the embedded default) or PostgreSQL, chosen by the URL's scheme.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::{Pool, Result, Scrub, Store, StoreError};

/// How long a PostgreSQL session of executor's may sit in a transaction waiting for its own client.
const IDLE_IN_TRANSACTION_LIMIT: &str = "10s";

/// The settings of every PostgreSQL session executor opens. A process paused or cut off inside a
/// transaction (SIGSTOP, a frozen VM, a dead link) would hold its locks — the worker-slot lock among
/// them — and stop every host; PostgreSQL ends such a session instead, since executor's transactions
/// never wait on their client for long.
pub fn pg_connect_options(url: &str) -> Result<PgConnectOptions, sqlx::Error> {
    Ok(PgConnectOptions::from_str(url)?
        .options([("idle_in_transaction_session_timeout", IDLE_IN_TRANSACTION_LIMIT)]))
}

impl Store {
    /// Opens `url`: `postgres://…` / `postgresql://…` for PostgreSQL, `sqlite://PATH` or a plain path for
    /// SQLite (the file and its directory are created if missing). Does not migrate: see `migrate`.
    pub async fn open(url: &str) -> Result<Store> {
        let shown = redact_url(url);
        let open_err = |cause| StoreError::Open { url: shown.clone(), cause };
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            // A server that is not there is said in milliseconds, not after the pool's 15 s timeout.
            if let Some(why) = unreachable_postgres(url).await {
                return Err(StoreError::Unreachable { url: shown, why });
            }
            let options = pg_connect_options(url).map_err(open_err)?;
            let pool = PgPoolOptions::new()
                .max_connections(8)
                .acquire_timeout(Duration::from_secs(15))
                .connect_with(options)
                .await
                .map_err(open_err)?;
            return Ok(Store { pool: Pool::Postgres(pool), scrub: Scrub::default() });
        }
        let path = url.strip_prefix("sqlite://").unwrap_or(url);
        Self::open_sqlite(Path::new(path)).await.map_err(|e| match e {
            StoreError::Db(source) => open_err(source),
            other => other,
        })
    }

    async fn open_sqlite(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // The io error alone ("File exists (os error 17)") names neither the directory nor the fix.
            std::fs::create_dir_all(dir).map_err(|e| {
                let said = std::io::Error::new(
                    e.kind(),
                    format!(
                        "cannot create the database's directory {}: {e}; a file may be in the way, or set \
                         [paths] data_dir (or database.url) to a directory you can write",
                        dir.display()
                    ),
                );
                StoreError::Db(sqlx::Error::Io(said))
            })?;
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
        // Two processes creating the same new file race to switch it to WAL, and SQLite answers the loser
        // SQLITE_BUSY at once, without waiting on the busy handler. The switch happens once per file, so
        // retrying the connection for as long as the busy timeout would have waited is enough.
        let deadline = std::time::Instant::now() + OPEN_BUSY_WAIT;
        loop {
            match SqlitePoolOptions::new().max_connections(4).connect_with(options.clone()).await {
                Ok(pool) => return Ok(Store { pool: Pool::Sqlite(pool), scrub: Scrub::default() }),
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// How long opening an SQLite file keeps retrying while another process holds it busy (as `busy_timeout`).
const OPEN_BUSY_WAIT: Duration = Duration::from_secs(30);

/// SQLITE_BUSY or SQLITE_LOCKED, in any of their extended forms.
pub(crate) fn is_busy(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => {
            db.code().and_then(|c| c.parse::<i64>().ok()).is_some_and(|c| matches!(c & 0xff, 5 | 6))
        }
        _ => false,
    }
}

/// The URL with its credentials replaced, for messages and logs. The authority ends at the first `/`
/// after the scheme, and its user part at the LAST `@` before that: a password may itself contain `@`
/// (unencoded), so splitting at the first one would leak the rest of it.
/// Why the PostgreSQL server of `url` cannot be reached over TCP within 3 s ("connection refused",
/// no answer), or `None` when it answers (or `url` names a Unix socket, which the driver judges).
pub async fn unreachable_postgres(url: &str) -> Option<String> {
    let after_scheme = url.split_once("://")?.1;
    let host_part = after_scheme.rsplit_once('@').map_or(after_scheme, |(_, h)| h);
    let host_port = host_part.split(['/', '?']).next().unwrap_or("");
    if host_port.is_empty() || host_port.starts_with('%') {
        return None;
    }
    let addr = if host_port.contains(':') { host_port.to_string() } else { format!("{host_port}:5432") };
    let probe = addr.clone();
    let reached = tokio::task::spawn_blocking(move || {
        use std::net::ToSocketAddrs;
        let target = probe.to_socket_addrs()?.next().ok_or(std::io::ErrorKind::NotFound)?;
        std::net::TcpStream::connect_timeout(&target, Duration::from_secs(3)).map(drop)
    })
    .await;
    match reached {
        Ok(Ok(())) | Err(_) => None,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            Some(format!("connection refused at {addr}: is PostgreSQL running there?"))
        }
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::TimedOut => {
            Some(format!("no answer from {addr} in 3 s"))
        }
        Ok(Err(e)) => Some(format!("cannot reach {addr}: {e}")),
    }
}

pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let rest = match rest[..authority_end].rfind('@') {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _password)) => format!("{user}:***@{}", &rest[at + 1..]),
            // A user name alone is not a secret.
            None => rest.to_string(),
        },
        None => rest.to_string(),
    };
    format!("{scheme}://{}", redact_query_password(&rest))
}

/// `?password=…` (PostgreSQL also takes the password as a query parameter) with its value replaced.
fn redact_query_password(rest: &str) -> String {
    let Some((before, query)) = rest.split_once('?') else {
        return rest.to_string();
    };
    let params: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
            _ => kv.to_string(),
        })
        .collect();
    format!("{before}?{}", params.join("&"))
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

    #[test]
    fn a_password_with_at_signs_is_redacted_whole() {
        assert_eq!(redact_url("postgres://u:p@ss@host/db"), "postgres://u:***@host/db");
        assert_eq!(
            redact_url("postgres://u:p@s@s@host:5432/db?x=a@b"),
            "postgres://u:***@host:5432/db?x=a@b"
        );
        assert_eq!(redact_url("postgres://u:p%40ss@host/db"), "postgres://u:***@host/db");
        assert_eq!(redact_url("postgres://host/db"), "postgres://host/db");
        assert_eq!(redact_url("postgres://host/db?user=a@b"), "postgres://host/db?user=a@b");
        assert_eq!(
            redact_url("postgres://host/db?user=a&password=s3@cret"),
            "postgres://host/db?user=a&password=***"
        );
        // Without a scheme the text is an SQLite path, which holds no credentials: shown as it is.
        assert_eq!(redact_url("/data/me@work/executor.db"), "/data/me@work/executor.db");
    }
}
