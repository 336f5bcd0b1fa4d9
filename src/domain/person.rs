//! People: what each may do on the dashboard, and who made a change.

use super::Actor;

/// What a person may do. Each role may do everything the one before it may: a viewer reads, an
/// approver also acts on tasks and runs (approve, skip, comment, answer), an admin also manages people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    Viewer,
    Approver,
    Admin,
}

super::named_enum!(Role, "role", {
    Viewer => "viewer",
    Approver => "approver",
    Admin => "admin",
});

impl Role {
    /// Whether this role may do what `needed` may.
    pub fn allows(self, needed: Role) -> bool {
        self >= needed
    }
}

/// Who made a change: the kind of actor, and by name the person (or the runner) when known. A bare
/// [`Actor`] converts into one without a name, for changes no person made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct By<'a> {
    pub actor: Actor,
    pub name: Option<&'a str>,
}

impl<'a> By<'a> {
    pub fn person(actor: Actor, name: &'a str) -> By<'a> {
        By { actor, name: Some(name) }
    }

    /// The name a record of the change keeps: the person's, else the actor's.
    pub fn shown(&self) -> &'a str {
        self.name.unwrap_or(self.actor.as_str())
    }
}

impl From<Actor> for By<'static> {
    fn from(actor: Actor) -> By<'static> {
        By { actor, name: None }
    }
}

/// Why a name cannot be a person's.
pub const PERSON_NAME_RULE: &str =
    "1 to 40 letters, digits, '.', '_' or '-', starting with a letter or digit";

/// Whether `name` may name a person: short and plain, so that it reads the same in the audit trail, a
/// pull request comment and a log line, and no one can pass for a runner or an actor.
pub fn valid_person_name(name: &str) -> bool {
    (1..=40).contains(&name.len())
        && name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !matches!(name, "cli" | "web" | "runner" | "analyzer" | "worker")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered() {
        assert!(Role::Admin.allows(Role::Approver) && Role::Approver.allows(Role::Viewer));
        assert!(!Role::Viewer.allows(Role::Approver) && !Role::Approver.allows(Role::Admin));
        assert_eq!("approver".parse::<Role>(), Ok(Role::Approver));
        assert!("owner".parse::<Role>().is_err());
    }

    #[test]
    fn person_names_are_plain() {
        for good in ["alice", "bob.smith", "ci-bot_2", "A"] {
            assert!(valid_person_name(good), "{good}");
        }
        for bad in ["", "-x", "a b", "émile", "web", "runner", "x\n", &"a".repeat(41)] {
            assert!(!valid_person_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn by_names_the_person_or_the_actor() {
        assert_eq!(By::from(Actor::Web).shown(), "web");
        assert_eq!(By::person(Actor::Web, "alice").shown(), "alice");
    }
}
