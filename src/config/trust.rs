//! Who may make a worker act: a value of the configuration, read by the forge's snapshot and the
//! dashboard alike.

use serde::{Deserialize, Serialize};

/// Whose comments can make a worker act: `repos.NAME.trusted_authors` and `trust_associations`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trust {
    pub authors: Vec<String>,
    #[serde(default)]
    pub associations: Vec<String>,
}

impl Trust {
    #[cfg(test)]
    pub fn authors(authors: &[String]) -> Trust {
        Trust { authors: authors.to_vec(), associations: Vec::new() }
    }

    pub fn trusts(&self, login: &str, association: Option<&str>) -> bool {
        self.authors.iter().any(|t| t.eq_ignore_ascii_case(login))
            || association.is_some_and(|a| self.associations.iter().any(|t| t.eq_ignore_ascii_case(a)))
    }
}
