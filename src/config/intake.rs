//! `[[sources]]`: where tasks come from. `[intake]` and `[[filters]]` (which tasks never reach the
//! analyzer) are the filter module's own types, [`crate::filter`].

use serde::Deserialize;

/// One `[[sources]]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// Recorded as each task's `source`; `intake.qualifying_sources` and the filters name it.
    pub name: String,
    /// `asana`, `github_issues`, `gitlab_issues`, `linear`, `jira` or `file`.
    pub kind: String,
    /// The repository (a key of `[repos]`) its tasks are worked in; empty: the only repository.
    #[serde(default)]
    pub repo: String,
    /// Asana, Linear, Jira: the variable holding the personal access token, API key or API token;
    /// unset: `ASANA_TOKEN`, `LINEAR_API_KEY`, `JIRA_API_TOKEN` (filled in by [`fill_source_defaults`]).
    #[serde(default)]
    pub token_env: String,
    /// Asana, Linear: the API base or endpoint (a test points it at a fake); unset: the tracker's own.
    #[serde(default)]
    pub api_url: String,
    /// Asana: project gids whose tasks to fetch. Linear: project names (issues of any of them).
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
    /// GitLab issues: the project's full path, `group/sub/project` (the instance and token are
    /// `[gitlab]`'s).
    #[serde(default)]
    pub gitlab: String,
    /// GitHub Issues, GitLab issues, Linear: only issues with all these labels.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Linear: team keys (`ENG`) whose issues to fetch; none: every team the key can read.
    #[serde(default)]
    pub teams: Vec<String>,
    /// Linear: only issues in these workflow states (by name, e.g. `["Todo"]`); none: every state
    /// that is not of type completed or canceled.
    #[serde(default)]
    pub states: Vec<String>,
    /// Linear: only issues assigned to this email, or to the key's own user with `"me"`. GitLab issues:
    /// to this username, or to the token's own user with `"me"`.
    #[serde(default)]
    pub assignee: String,
    /// GitLab issues: only issues in the milestone of this title.
    #[serde(default)]
    pub milestone: String,
    /// Linear: the workflow state (by name, in the issue's team) an issue moves to at an event it is
    /// told of, e.g. `{ pr_opened = "In Progress", complete = "In Review", merged = "Done" }`.
    #[serde(default)]
    pub writeback_states: std::collections::BTreeMap<crate::domain::WritebackEvent, String>,
    /// Jira: the site, e.g. `https://yourco.atlassian.net` (Cloud) or a Data Center's address.
    #[serde(default)]
    pub base_url: String,
    /// Jira: the query selecting the issues, e.g. `project = APP AND status = 'To Do'` (an `ORDER BY`
    /// is replaced).
    #[serde(default)]
    pub jql: String,
    /// Jira: `basic` (Cloud: `email` and an API token) or `bearer` (Data Center: a personal access
    /// token; REST API v2).
    #[serde(default = "default_jira_auth")]
    pub auth: String,
    /// Jira Cloud: the Atlassian account the API token belongs to.
    #[serde(default)]
    pub email: String,
    /// Jira: the transition (by its name or the status it leads to) an issue takes at an event it is
    /// told of, e.g. `{ pr_opened = "In Progress", complete = "In Review", merged = "Done" }`.
    #[serde(default)]
    pub writeback_transitions: std::collections::BTreeMap<crate::domain::WritebackEvent, String>,
    /// GitHub Issues: `open` (default) or `all`. GitLab issues: `opened` (default; `open` says the same)
    /// or `all`.
    #[serde(default = "default_issue_state")]
    pub state: String,
    /// File: a JSON Lines or CSV file, read whole at every intake; `~/` is the home directory and a
    /// relative path is read beside the config file.
    #[serde(default)]
    pub path: String,
    /// Asana, GitHub Issues, GitLab issues, Linear, Jira: the events the tracker is told of (`pr_opened`, `complete`, `abandoned`,
    /// `plan`, `question`, `skipped`, `approved`, `merged`); unset: the first five; `[]`: none. A file
    /// source has no tracker.
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
    /// Asana, Jira, GitLab issues: the people (Asana user gids, Jira account ids, GitLab usernames) whose
    /// comment on a task answers the open question of its run, as an answer on the dashboard would;
    /// none: a comment in the tracker answers nothing.
    #[serde(default)]
    pub answerers: Vec<String>,
}

impl SourceConfig {
    /// Whether this kind of source has a tracker to write to.
    pub fn writes_back(&self) -> bool {
        matches!(self.kind.as_str(), "asana" | "github_issues" | "gitlab_issues" | "linear" | "jira")
    }

    /// Whether this kind of source reads a token from `token_env` (GitHub Issues uses `[github]`'s,
    /// GitLab issues `[gitlab]`'s).
    pub fn has_token_env(&self) -> bool {
        matches!(self.kind.as_str(), "asana" | "linear" | "jira")
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

/// Fills in what a source's kind implies when the config leaves it out: Asana's and Linear's token
/// variable and API address. (Defaults by kind cannot be serde defaults: the kind is another key.)
pub(super) fn fill_source_defaults(sources: &mut [SourceConfig]) {
    for s in sources {
        let (token_env, api_url) = match s.kind.as_str() {
            "asana" => ("ASANA_TOKEN", "https://app.asana.com/api/1.0"),
            "linear" => ("LINEAR_API_KEY", "https://api.linear.app/graphql"),
            "jira" => ("JIRA_API_TOKEN", ""),
            _ => continue,
        };
        if s.token_env.is_empty() {
            s.token_env = token_env.into();
        }
        if s.api_url.is_empty() && !api_url.is_empty() {
            s.api_url = api_url.into();
        }
    }
}

fn default_jira_auth() -> String {
    "basic".into()
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
        if s.kind != "linear"
            && (!s.writeback_states.is_empty() || !s.teams.is_empty() || !s.states.is_empty())
        {
            return Err(format!("{}: teams, states and writeback_states are a Linear source's", key("kind")));
        }
        if s.kind != "jira"
            && (!s.base_url.is_empty()
                || !s.jql.is_empty()
                || !s.email.is_empty()
                || !s.writeback_transitions.is_empty()
                || s.auth != "basic")
        {
            return Err(format!(
                "{}: base_url, jql, email, auth and writeback_transitions are a Jira source's",
                key("kind")
            ));
        }
        if !matches!(s.kind.as_str(), "asana" | "jira" | "gitlab_issues") && !s.answerers.is_empty() {
            return Err(format!(
                "{}: answerers are an Asana source's (user gids), a Jira source's (account ids) or a GitLab \
                 issues source's (usernames)",
                key("answerers")
            ));
        }
        if s.kind != "gitlab_issues" && (!s.gitlab.is_empty() || !s.milestone.is_empty()) {
            return Err(format!("{}: gitlab and milestone are a GitLab issues source's", key("kind")));
        }
        let plain = |a: &String| {
            !a.is_empty() && a.len() <= 128 && !a.chars().any(|c| c.is_whitespace() || c.is_control())
        };
        if s.kind == "jira"
            && let Some(who) = s.answerers.iter().find(|a| !plain(a))
        {
            return Err(format!("{}: {who:?} is not a Jira account id or user name", key("answerers")));
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
                if let Some(who) = s.answerers.iter().find(|g| !gid(g)) {
                    return Err(format!("{}: {who:?} is not an Asana user gid", key("answerers")));
                }
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
            "linear" => validate_linear(s, &key)?,
            "gitlab_issues" => validate_gitlab_issues(s, &key)?,
            "jira" => super::jira::validate_jira(s, &config.sources, &key)?,
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
            _ => {
                return Err(format!(
                    "{}: must be one of: asana, github_issues, gitlab_issues, linear, jira, file",
                    key("kind")
                ));
            }
        }
    }
    Ok(())
}

/// A Linear source: only Linear's own keys, state names that can be sent, an assignee that is an
/// email or `me`.
fn validate_linear(s: &SourceConfig, key: &dyn Fn(&str) -> String) -> Result<(), String> {
    if !s.writeback_sections.is_empty()
        || !s.writeback_custom_fields.is_empty()
        || s.writeback_complete_on_merge
    {
        return Err(format!(
            "{}: sections, custom fields and completion are Asana's; a Linear issue moves through \
             writeback_states (e.g. {{ complete = \"In Review\", merged = \"Done\" }})",
            key("writeback_sections")
        ));
    }
    if !s.sections.is_empty() || !s.user_task_list.is_empty() || !s.github.is_empty() || !s.path.is_empty() {
        return Err(format!(
            "{}: a Linear source reads teams, projects, states, labels and assignee only",
            key("sections")
        ));
    }
    let blank = |v: &String| v.trim().is_empty() || v.chars().any(char::is_control);
    for (name, values) in
        [("teams", &s.teams), ("projects", &s.projects), ("states", &s.states), ("labels", &s.labels)]
    {
        if values.iter().any(blank) {
            return Err(format!("{}: an entry is empty or has control characters", key(name)));
        }
    }
    if let Some((event, state)) = s.writeback_states.iter().find(|(_, state)| blank(state)) {
        return Err(format!(
            "{}: {state:?} for {event} is not a workflow state's name",
            key("writeback_states")
        ));
    }
    if let Some(event) = s.writeback_states.keys().find(|e| !s.writeback_events().contains(e)) {
        return Err(format!(
            "{}: an issue moves at {event} only when {event} is told: add \"{event}\" to writeback",
            key("writeback_states")
        ));
    }
    if !s.assignee.is_empty() && s.assignee != "me" && !s.assignee.contains('@') {
        return Err(format!("{}: must be an email address or \"me\"", key("assignee")));
    }
    if s.token_env.is_empty() {
        return Err(format!("{}: name the variable holding the Linear API key", key("token_env")));
    }
    Ok(())
}

/// A GitLab issues source: a project path, filters GitLab can be asked for, usernames as answerers,
/// and no other tracker's keys.
fn validate_gitlab_issues(s: &SourceConfig, key: &dyn Fn(&str) -> String) -> Result<(), String> {
    if !s.writeback_sections.is_empty()
        || !s.writeback_custom_fields.is_empty()
        || s.writeback_complete_on_merge
    {
        return Err(format!(
            "{}: sections, custom fields and completion are Asana's; an issue closes through the merge \
             request's `Closes group/project#IID`",
            key("writeback_sections")
        ));
    }
    if !s.projects.is_empty()
        || !s.sections.is_empty()
        || !s.user_task_list.is_empty()
        || !s.github.is_empty()
    {
        return Err(format!(
            "{}: a GitLab issues source reads gitlab, labels, assignee, milestone and state only",
            key("projects")
        ));
    }
    if !super::valid_project_path(&s.gitlab) {
        return Err(format!("{}: must be the project's full path, as \"group/sub/project\"", key("gitlab")));
    }
    // As `intake::source::gitlab_issues::IssueState::parse` reads it.
    if !matches!(s.state.as_str(), "opened" | "open" | "all") {
        return Err(format!("{}: must be \"opened\" or \"all\"", key("state")));
    }
    if let Some(label) = s.labels.iter().find(|l| {
        l.trim().is_empty() || l.contains(',') || ["none", "any"].contains(&l.to_ascii_lowercase().as_str())
    }) {
        return Err(format!(
            "{}: {label:?} cannot be asked for (empty, holding a ',', or GitLab's None/Any)",
            key("labels")
        ));
    }
    let username = |u: &str| {
        !u.is_empty()
            && u.len() <= 255
            && u.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    };
    if !s.assignee.is_empty() && !username(&s.assignee) {
        return Err(format!("{}: must be a GitLab username or \"me\"", key("assignee")));
    }
    if s.milestone.chars().any(char::is_control) || (!s.milestone.is_empty() && s.milestone.trim().is_empty())
    {
        return Err(format!("{}: must be a milestone's title", key("milestone")));
    }
    if let Some(who) = s.answerers.iter().find(|a| !username(a)) {
        return Err(format!("{}: {who:?} is not a GitLab username", key("answerers")));
    }
    Ok(())
}
