//! `[[sources]]`: where tasks come from. `[intake]` and `[[filters]]` (which tasks never reach the
//! analyzer) are the filter module's own types, [`crate::filter`].

use serde::Deserialize;

/// One `[[sources]]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// Recorded as each task's `source`; `intake.qualifying_sources` and the filters name it.
    pub name: String,
    /// `asana`, `github_issues` or `file`.
    pub kind: String,
    /// The repository (a key of `[repos]`) its tasks are worked in; empty: the only repository.
    #[serde(default)]
    pub repo: String,
    /// Asana: the variable holding the personal access token.
    #[serde(default = "default_asana_token_env")]
    pub token_env: String,
    /// Asana: the API base (a test points it at a fake).
    #[serde(default = "default_asana_api_url")]
    pub api_url: String,
    /// Asana: project gids whose tasks to fetch.
    #[serde(default)]
    pub projects: Vec<String>,
    /// Asana: section gids whose tasks to fetch.
    #[serde(default)]
    pub sections: Vec<String>,
    /// Asana: a user task list gid ("My Tasks").
    #[serde(default)]
    pub user_task_list: String,
    /// GitHub Issues: `owner/name` (the API and token are `[github]`'s).
    #[serde(default)]
    pub github: String,
    /// GitHub Issues: only issues with all these labels.
    #[serde(default)]
    pub labels: Vec<String>,
    /// GitHub Issues: `open` (default) or `all`.
    #[serde(default = "default_issue_state")]
    pub state: String,
    /// File: a JSON Lines or CSV file, read whole at every intake; `~/` is the home directory and a
    /// relative path is read beside the config file.
    #[serde(default)]
    pub path: String,
    /// Asana, GitHub Issues: the events the tracker is told of (`pr_opened`, `complete`, `abandoned`,
    /// `skipped`, `approved`); unset: the first three; `[]`: none. A file source has no tracker.
    #[serde(default)]
    pub writeback: Option<Vec<crate::domain::WritebackEvent>>,
    /// How long one write-back request may take before it counts as failed (and is looked for in the
    /// tracker before it is sent again).
    #[serde(default = "default_writeback_timeout")]
    pub writeback_timeout: super::Duration,
    /// Asana: the section (gid) a task is moved to at an event it is told of, e.g.
    /// `{ pr_opened = "1200…", complete = "1200…" }`.
    #[serde(default)]
    pub writeback_sections: std::collections::BTreeMap<crate::domain::WritebackEvent, String>,
    /// Asana: custom fields set on the task at an event, by field gid: a text value or an enum option's
    /// gid, e.g. `{ complete = { "1200…" = "1200…" } }`.
    #[serde(default)]
    pub writeback_custom_fields:
        std::collections::BTreeMap<crate::domain::WritebackEvent, std::collections::BTreeMap<String, String>>,
    /// Asana: mark the task complete when its pull request merges (with `merged` in `writeback`).
    #[serde(default)]
    pub writeback_complete_on_merge: bool,
}

impl SourceConfig {
    /// Whether this kind of source has a tracker to write to.
    pub fn writes_back(&self) -> bool {
        matches!(self.kind.as_str(), "asana" | "github_issues")
    }

    /// The events this source's tracker is told of.
    pub fn writeback_events(&self) -> &[crate::domain::WritebackEvent] {
        match &self.writeback {
            Some(events) => events,
            None if self.writes_back() => crate::domain::WritebackEvent::DEFAULT,
            None => &[],
        }
    }
}

fn default_writeback_timeout() -> super::Duration {
    super::Duration(std::time::Duration::from_secs(30))
}

fn default_asana_token_env() -> String {
    "ASANA_TOKEN".into()
}

fn default_asana_api_url() -> String {
    "https://app.asana.com/api/1.0".into()
}

fn default_issue_state() -> String {
    "open".into()
}

/// Checks the sources: unique names that a task's `source` can hold, a known kind with what that kind
/// needs, a repo that exists. Errors name the key.
pub(super) fn validate_sources(config: &super::Config) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for (i, s) in config.sources.iter().enumerate() {
        let key = |k: &str| format!("key `sources[{i}].{k}` ({:?})", s.name);
        if s.name.trim().is_empty() || s.name.chars().any(char::is_control) {
            return Err(format!("{}: a source needs a name (it is recorded on its tasks)", key("name")));
        }
        if !seen.insert(s.name.as_str()) {
            return Err(format!("{}: two sources have this name; each needs its own", key("name")));
        }
        if !s.repo.is_empty() && !config.repos.contains_key(&s.repo) {
            return Err(format!("{}: there is no [repos.{}]", key("repo"), s.repo));
        }
        match s.kind.as_str() {
            "asana" => {
                if s.projects.is_empty() && s.sections.is_empty() && s.user_task_list.is_empty() {
                    return Err(format!(
                        "{}: an Asana source needs projects, sections or user_task_list",
                        key("projects")
                    ));
                }
                if s.token_env.is_empty() {
                    return Err(format!("{}: name the variable holding the Asana token", key("token_env")));
                }
                if let Some((event, gid)) = s
                    .writeback_sections
                    .iter()
                    .find(|(_, gid)| gid.is_empty() || !gid.bytes().all(|b| b.is_ascii_digit()))
                {
                    return Err(format!(
                        "{}: {gid:?} for {event} is not a section gid",
                        key("writeback_sections")
                    ));
                }
                let gid = |g: &str| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit());
                if let Some((event, field)) = s
                    .writeback_custom_fields
                    .iter()
                    .find_map(|(event, fields)| fields.keys().find(|f| !gid(f)).map(|f| (event, f)))
                {
                    return Err(format!(
                        "{}: {field:?} for {event} is not a custom field gid",
                        key("writeback_custom_fields")
                    ));
                }
                if s.writeback_complete_on_merge
                    && !s.writeback_events().contains(&crate::domain::WritebackEvent::Merged)
                {
                    return Err(format!(
                        "{}: a task is completed when its merge is told: add \"merged\" to writeback",
                        key("writeback_complete_on_merge")
                    ));
                }
            }
            "github_issues" => {
                if !s.writeback_sections.is_empty()
                    || !s.writeback_custom_fields.is_empty()
                    || s.writeback_complete_on_merge
                {
                    return Err(format!(
                        "{}: sections, custom fields and completion are Asana's; an issue closes through `Closes #N`",
                        key("writeback_sections")
                    ));
                }
                let ok = s.github.split_once('/').is_some_and(|(o, n)| {
                    !o.is_empty() && !n.is_empty() && !n.contains('/') && !s.github.starts_with('-')
                });
                if !ok {
                    return Err(format!("{}: must be the repository as \"owner/name\"", key("github")));
                }
                if !matches!(s.state.as_str(), "open" | "all") {
                    return Err(format!("{}: must be \"open\" or \"all\"", key("state")));
                }
            }
            "file" => {
                if s.path.is_empty() {
                    return Err(format!("{}: a file source needs the file's path", key("path")));
                }
                if s.writeback.as_ref().is_some_and(|w| !w.is_empty()) {
                    return Err(format!(
                        "{}: a file source has no tracker to write back to (`executor events --json` \
                         serves scripts); remove the key",
                        key("writeback")
                    ));
                }
            }
            _ => return Err(format!("{}: must be one of: asana, github_issues, file", key("kind"))),
        }
    }
    Ok(())
}
