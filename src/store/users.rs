//! The people who use the dashboard: a name, a role and the SHA-256 of a personal token each. Adding,
//! revoking and changing a role are each one conditional write with its event, so the audit trail says
//! who let whom in.

use chrono::{DateTime, Utc};

use super::events::{NewEvent, kind, update_one_with_event};
use super::row::Cols;
use super::{Result, Store, StoreError, now, on_pool};
use crate::domain::{By, Role};

/// A person, as the dashboard and `executor users list` show them (never their token).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct User {
    pub id: i64,
    pub name: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
    pub created_by: Option<String>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// When they last marked Needs you as looked at.
    pub looked_at: Option<DateTime<Utc>>,
    /// The GitHub account "Sign in with GitHub" logs in as them (lowercase).
    pub github_login: Option<String>,
}

impl User {
    pub fn active(&self) -> bool {
        self.revoked_at.is_none()
    }
}

const USER_COLUMNS: &str = "id, name, role, created_at, created_by, revoked_at, looked_at, github_login";

fn user_from_row(r: &impl Cols) -> Result<User> {
    Ok(User {
        id: r.req_int("id")?,
        name: r.req_text("name")?,
        role: r
            .req_text("role")?
            .parse()
            .map_err(|e: crate::domain::UnknownName| StoreError::Corrupt(e.to_string()))?,
        created_at: r.req_time("created_at")?,
        created_by: r.text("created_by")?,
        revoked_at: r.time("revoked_at")?,
        looked_at: r.time("looked_at")?,
        github_login: r.text("github_login")?,
    })
}

/// GitHub's rule for a login: 1 to 39 letters, digits or hyphens, not starting or ending with one.
fn valid_github_login(login: &str) -> bool {
    (1..=39).contains(&login.len())
        && login.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !login.starts_with('-')
        && !login.ends_with('-')
}

fn said<'a>(by: By<'a>, reason: &'a str) -> NewEvent<'a> {
    NewEvent {
        actor: by.actor,
        actor_id: by.name,
        task_gid: None,
        run_id: None,
        kind: kind::NOTE,
        from_state: None,
        to_state: None,
        reason: Some(reason),
    }
}

impl Store {
    /// Adds a person with the hash of their personal token. Refused while someone active has the name.
    pub async fn add_user(&self, name: &str, role: Role, token_sha256: &str, by: By<'_>) -> Result<User> {
        let reason = format!("{name} may use the dashboard as {role}");
        let added = update_one_with_event!(
            self,
            said(by, &reason),
            "INSERT INTO executor_users (name, role, token_sha256, created_at, created_by) \
             SELECT $1, $2, $3, $4, $5 \
             WHERE NOT EXISTS (SELECT 1 FROM executor_users WHERE name = $6 AND revoked_at IS NULL)",
            name,
            role.as_str(),
            token_sha256,
            now(),
            by.shown(),
            name,
        );
        if !added {
            return Err(StoreError::Refused(format!(
                "someone named {name} uses the dashboard already: revoke them first (`executor users revoke \
                 {name}`) or choose another name"
            )));
        }
        self.active_user(name).await?.ok_or_else(|| StoreError::Conflict(format!("person {name}")))
    }

    /// Everyone ever added, active first, then by name.
    pub async fn users(&self) -> Result<Vec<User>> {
        let sql =
            format!("SELECT {USER_COLUMNS} FROM executor_users ORDER BY revoked_at IS NOT NULL, name, id");
        on_pool!(self, |p| sqlx::query(&sql).fetch_all(p).await?.iter().map(user_from_row).collect())
    }

    /// The active person named `name`.
    pub async fn active_user(&self, name: &str) -> Result<Option<User>> {
        let sql = format!("SELECT {USER_COLUMNS} FROM executor_users WHERE name = $1 AND revoked_at IS NULL");
        on_pool!(self, |p| sqlx::query(&sql)
            .bind(name)
            .fetch_optional(p)
            .await?
            .as_ref()
            .map(user_from_row)
            .transpose())
    }

    /// The active person named `name`, or a refusal that says there is none.
    async fn someone_active(&self, name: &str) -> Result<User> {
        self.active_user(name).await?.ok_or_else(|| {
            StoreError::Refused(format!("no one named {name} uses the dashboard (see `executor users list`)"))
        })
    }

    /// The active person whose personal token hashes to `token_sha256`.
    pub async fn user_by_token(&self, token_sha256: &str) -> Result<Option<User>> {
        let sql = format!(
            "SELECT {USER_COLUMNS} FROM executor_users WHERE token_sha256 = $1 AND revoked_at IS NULL"
        );
        on_pool!(self, |p| {
            sqlx::query(&sql)
                .bind(token_sha256)
                .fetch_optional(p)
                .await?
                .as_ref()
                .map(user_from_row)
                .transpose()
        })
    }

    /// Person `id`, active or not.
    pub async fn user(&self, id: i64) -> Result<Option<User>> {
        let sql = format!("SELECT {USER_COLUMNS} FROM executor_users WHERE id = $1");
        on_pool!(self, |p| sqlx::query(&sql)
            .bind(id)
            .fetch_optional(p)
            .await?
            .as_ref()
            .map(user_from_row)
            .transpose())
    }

    /// Ends `name`'s access: their token and every session they hold stop working at once.
    pub async fn revoke_user(&self, name: &str, by: By<'_>) -> Result<User> {
        let user = self.someone_active(name).await?;
        let reason = format!("{name} may no longer use the dashboard");
        let revoked = update_one_with_event!(
            self,
            said(by, &reason),
            "UPDATE executor_users SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
            now(),
            user.id,
        );
        if !revoked {
            return Err(StoreError::Conflict(format!("person {name}")));
        }
        Ok(self.user(user.id).await?.unwrap_or(user))
    }

    /// Gives `name` another role, effective on their next request.
    pub async fn set_user_role(&self, name: &str, role: Role, by: By<'_>) -> Result<User> {
        let user = self.someone_active(name).await?;
        let reason = format!("{name} is now {role} (was {})", user.role);
        let changed = update_one_with_event!(
            self,
            said(by, &reason),
            "UPDATE executor_users SET role = $1 WHERE id = $2 AND revoked_at IS NULL",
            role.as_str(),
            user.id,
        );
        if !changed {
            return Err(StoreError::Conflict(format!("person {name}")));
        }
        Ok(self.user(user.id).await?.unwrap_or(user))
    }

    /// Links `name` to a GitHub account (`None`: unlinks): "Sign in with GitHub" as that account logs in
    /// as them. Refused while another active person has the account.
    pub async fn set_user_github(&self, name: &str, login: Option<&str>, by: By<'_>) -> Result<User> {
        let user = self.someone_active(name).await?;
        let login = login.map(str::to_lowercase);
        if let Some(l) = login.as_deref().filter(|l| !valid_github_login(l)) {
            return Err(StoreError::Refused(format!(
                "{l:?} is not a GitHub login (up to 39 letters, digits and single hyphens)"
            )));
        }
        if let Some(l) = &login
            && let Some(other) = self.user_by_github(l).await?.filter(|o| o.id != user.id)
        {
            return Err(StoreError::Refused(format!("GitHub user {l} signs in as {} already", other.name)));
        }
        let reason = match &login {
            Some(l) => format!("{name} signs in with GitHub as {l}"),
            None => format!("{name} no longer signs in with GitHub"),
        };
        let changed = update_one_with_event!(
            self,
            said(by, &reason),
            "UPDATE executor_users SET github_login = $1 WHERE id = $2 AND revoked_at IS NULL",
            login.as_deref(),
            user.id,
        );
        if !changed {
            return Err(StoreError::Conflict(format!("person {name}")));
        }
        Ok(self.user(user.id).await?.unwrap_or(user))
    }

    /// The active person GitHub account `login` signs in as (compared ignoring case, as GitHub does).
    pub async fn user_by_github(&self, login: &str) -> Result<Option<User>> {
        let sql = format!(
            "SELECT {USER_COLUMNS} FROM executor_users WHERE github_login = $1 AND revoked_at IS NULL"
        );
        let login = login.to_lowercase();
        on_pool!(self, |p| {
            sqlx::query(&sql).bind(&login).fetch_optional(p).await?.as_ref().map(user_from_row).transpose()
        })
    }

    /// Person `id` looked at Needs you at `at`: what changed is counted from here on.
    pub async fn mark_looked(&self, id: i64, at: DateTime<Utc>) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query("UPDATE executor_users SET looked_at = $1 WHERE id = $2")
                .bind(at)
                .bind(id)
                .execute(p)
                .await?;
        });
        Ok(())
    }
}
