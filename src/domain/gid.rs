use std::fmt;

/// A tracker task id. It later becomes a directory name (work logs) and part of a branch name, so it is
/// validated once, here, and every other module takes a `TaskGid` rather than a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct TaskGid(String);

pub const GID_RULE: &str = "a task gid may contain only letters, digits, '.', '_' and '-', must not start with '.', and is at most 128 characters";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid task gid {value:?}: {GID_RULE}")]
pub struct GidError {
    pub value: String,
}

impl TaskGid {
    pub fn parse(value: &str) -> Result<Self, GidError> {
        let ok = !value.is_empty()
            && value.len() <= 128
            && !value.starts_with('.')
            && value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(TaskGid(value.to_string()))
        } else {
            Err(GidError { value: value.chars().take(160).collect() })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TaskGid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for TaskGid {
    type Err = GidError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TaskGid::parse(s)
    }
}

impl<'de> serde::Deserialize<'de> for TaskGid {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        TaskGid::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_tracker_ids() {
        for ok in ["1207", "ABC-12", "gh_owner.repo-42", &"a".repeat(128)] {
            assert!(TaskGid::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_anything_that_could_escape_a_directory_or_a_command() {
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "../etc",
            "a/b",
            "a\\b",
            "a b",
            "a;rm",
            "$(x)",
            "ü",
            "a\0b",
            &"a".repeat(129),
        ] {
            let err = TaskGid::parse(bad).unwrap_err();
            assert!(err.to_string().contains("only letters, digits"), "{bad:?}");
        }
    }
}
