//! Who is at the page: a person added with `executor users add` (their name and role), or whoever
//! holds the dashboard's own token (an admin with no name: the setup's owner). Put in every admitted
//! request's extensions by the security layer; the handlers record changes in the person's name.

use axum::http::Method;

use crate::domain::{Actor, By, Role};

/// The prefix of a personal token: tells it from the dashboard token at a glance and in a leak scanner.
pub const TOKEN_PREFIX: &str = "exu_";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// `executor_users.id`; `None` for the dashboard token's holder.
    pub id: Option<i64>,
    pub name: Option<String>,
    pub role: Role,
}

impl Person {
    /// Whoever holds the dashboard token: may do everything, and is recorded as `web`.
    pub fn token_holder() -> Person {
        Person { id: None, name: None, role: Role::Admin }
    }

    /// Who made a change through the dashboard, for the audit trail.
    pub fn by(&self) -> By<'_> {
        match &self.name {
            Some(name) => By::person(Actor::Web, name),
            None => Actor::Web.into(),
        }
    }

    /// The name pages greet and sign with.
    pub fn shown(&self) -> &str {
        self.name.as_deref().unwrap_or("dashboard token")
    }

    /// Why this person may not do what needs `needed`, and who can change that.
    pub fn not_allowed(&self, needed: Role) -> String {
        let what = match needed {
            Role::Admin => "managing people",
            _ => "changing tasks and runs",
        };
        match &self.name {
            Some(name) => format!(
                "{name} is {} {}: {what} needs the {needed} role (an admin can give it: `executor users \
                 role {name} {needed}`)",
                if self.role == Role::Viewer { "a" } else { "an" },
                self.role
            ),
            None => format!("{what} needs the {needed} role"),
        }
    }
}

impl From<crate::store::User> for Person {
    fn from(u: crate::store::User) -> Person {
        Person { id: Some(u.id), name: Some(u.name), role: u.role }
    }
}

/// Who a token belongs to: the dashboard's own (its holder), or an active person's personal token.
pub async fn whose_token(
    store: &crate::store::Store,
    dashboard_token: &str,
    given: &str,
) -> Result<Option<Person>, crate::store::StoreError> {
    if super::session::same(given, dashboard_token) {
        return Ok(Some(Person::token_holder()));
    }
    if !given.starts_with(TOKEN_PREFIX) {
        return Ok(None);
    }
    Ok(store.user_by_token(&token_sha256(given)).await?.map(Person::from))
}

tokio::task_local! {
    /// The person a request being answered is from, for the pages' header (`pages::render`): set around
    /// each admitted request by the security layer, so no handler has to pass it down.
    static AT_PAGE: Person;
}

/// Runs `answer` (an admitted request's handler) with `person` as the one at the page.
pub async fn answering<F: std::future::Future>(person: Person, answer: F) -> F::Output {
    AT_PAGE.scope(person, answer).await
}

/// The person the request being answered is from, if any.
pub fn at_page() -> Option<Person> {
    AT_PAGE.try_with(Person::clone).ok()
}

/// The least role a request needs. People are managed by admins only (reads too: the list names
/// everyone); logging out and marking Needs you as looked at are anyone's; every other change needs an
/// approver; reading needs nothing more than being let in.
pub fn needed_role(method: &Method, path: &str) -> Role {
    let reads = matches!(*method, Method::GET | Method::HEAD);
    if path == "/users" || path.starts_with("/users/") || path.starts_with("/api/v1/users") {
        Role::Admin
    } else if reads || path == "/logout" || path == "/looked" || path == "/api/v1/looked" {
        Role::Viewer
    } else {
        Role::Approver
    }
}

/// A person's login URL: where people open the dashboard (its bind address or, for one bound to every
/// address, the first name in `web.allowed_hosts`, else localhost) with their token.
pub fn login_url(web: &crate::config::Web, token: &str) -> String {
    let host = match web.bind.as_str() {
        "0.0.0.0" | "::" => web.allowed_hosts.first().cloned().unwrap_or_else(|| "localhost".into()),
        h if h.contains(':') && !h.starts_with('[') => format!("[{h}]"),
        h => h.to_string(),
    };
    format!("http://{host}:{}/?token={token}", web.port)
}

/// A new personal token: the prefix and 32 random bytes in hex; `None` without randomness.
pub fn new_token() -> Option<String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new().fill(&mut bytes).ok()?;
    Some(format!("{TOKEN_PREFIX}{}", super::session::hex(&bytes)))
}

/// What the database keeps of a personal token: its SHA-256, in hex. A token has 256 random bits, so
/// a fast hash is enough: nothing can be guessed from it.
pub fn token_sha256(token: &str) -> String {
    super::session::hex(ring::digest::digest(&ring::digest::SHA256, token.as_bytes()).as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_needed() {
        assert_eq!(needed_role(&Method::GET, "/runs/3"), Role::Viewer);
        assert_eq!(needed_role(&Method::POST, "/runs/3/abandon"), Role::Approver);
        assert_eq!(needed_role(&Method::POST, "/api/v1/tasks/t1/approve"), Role::Approver);
        assert_eq!(needed_role(&Method::GET, "/api/v1/users"), Role::Admin);
        assert_eq!(needed_role(&Method::GET, "/users"), Role::Admin);
        assert_eq!(needed_role(&Method::POST, "/users/alice/revoke"), Role::Admin);
        assert_eq!(needed_role(&Method::POST, "/logout"), Role::Viewer);
        assert_eq!(needed_role(&Method::POST, "/looked"), Role::Viewer);
        assert_eq!(needed_role(&Method::GET, "/usersettings"), Role::Viewer);
    }

    #[test]
    fn tokens_are_random_and_only_their_hash_is_kept() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_ne!(a, b);
        assert!(a.starts_with(TOKEN_PREFIX) && a.len() == TOKEN_PREFIX.len() + 64);
        assert_eq!(token_sha256(&a), token_sha256(&a));
        assert_ne!(token_sha256(&a), token_sha256(&b));
        assert!(!token_sha256(&a).contains(&a[TOKEN_PREFIX.len()..]));
    }
}
