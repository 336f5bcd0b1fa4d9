//! `executor config reference`: every key of `executor.toml` with its type, default and meaning, as
//! Markdown (docs/configuration.md is exactly this output, and a test holds them equal).
//!
//! The source is the template `executor init` writes: its comments are the meanings and its values the
//! defaults (`the_template_states_exactly_the_defaults` holds those to `Config::default()`). Tables the
//! template shows only as commented examples (`[[sources]]`, `[repos.NAME]`, `[cluster]`) and keys it
//! does not show at all get their default, and a meaning where the template has none, from [`MORE`].
//! tests/docs_config_reference.rs checks that every key the config accepts is documented here, and that
//! every default [`MORE`] states is what leaving the key out gives.

use super::TEMPLATE;

/// One documented key.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// The table as written in the reference: `runner`, `worker.max_turns`, `sources`, `repos.NAME`.
    pub table: String,
    pub key: String,
    /// `string`, `duration`, `integer`, `number`, `boolean`, `list of strings`, `table`.
    pub kind: String,
    /// A TOML value (what leaving the key out gives), `required`, or words when it depends on another key.
    pub default: Default,
    pub meaning: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Default {
    /// A TOML value: what the key is when it is left out.
    Value(String),
    /// The table cannot be written without it.
    Required,
    /// It depends on other keys; said in words.
    Words(String),
}

/// A table: its name in the reference, whether `init` writes it (else it is a commented example in the
/// template), and what the template says of it as a whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub name: String,
    pub written: bool,
    pub about: String,
}

/// What the template does not say: `(table, key, type, default, meaning)`. A default of `""` here
/// keeps the template's value; `"required"` is [`Default::Required`]; `"~words"` is [`Default::Words`].
/// A meaning of `""` keeps the template's comment.
#[rustfmt::skip]
const MORE: &[(&str, &str, &str, &str, &str)] = &[
    ("worker.max_turns", "in_progress", "", "", "Turn limit of an `in_progress` worker."),
    ("worker.max_turns", "fix_ci", "", "", "Turn limit of a `fix_ci` worker."),
    ("worker.max_turns", "fix_comments", "", "", "Turn limit of a `fix_comments` worker."),
    ("worker.max_turns", "pr_review", "", "", "Turn limit of a `pr_review` worker."),
    ("worker.max_turns", "fix_conflicts", "", "", "Turn limit of a `fix_conflicts` worker."),
    ("worker.max_turns", "plan", "", "", "Turn limit of a `plan` worker."),
    ("worker.claude", "program", "", "", "The Claude Code program: a name on PATH or a path."),
    ("worker.codex", "program", "", "", "The Codex CLI program: a name on PATH or a path."),
    ("worker.codex", "sandbox", "", "", "Codex's own `--sandbox` for workers, where executor does not contain the agent (`worker.sandbox`)."),
    ("worker.codex", "model", "", "", "Empty: Codex's default model."),
    ("analyzer", "codex_sandbox", "", "", "Codex's `--sandbox` for triage: read-only."),
    ("budget", "per_run_usd", "", "", "The dollar cap of one run (all its workers), summed from the agents' reported cost. A worker over a cap is stopped and a human told."),
    ("budget", "per_day_usd", "", "", "The daily dollar cap over every worker and triage, summed from the agents' reported cost."),
    ("pricing.default", "output", "", "", "Dollars per million output tokens."),
    ("pricing.default", "cache_read", "", "", "Dollars per million tokens read from the prompt cache."),
    ("pricing.default", "cache_write", "", "", "Dollars per million tokens written to the prompt cache."),
    ("github", "app_id", "", "", "A GitHub App's id (with `private_key_path` and `installation_id`); 0 for none."),
    ("github", "private_key_path", "", "", "The GitHub App's private key (PEM), with `app_id` and `installation_id`."),
    ("github", "installation_id", "", "", "The GitHub App's installation; 0 for none."),
    ("web", "port", "", "", "The dashboard's port."),
    ("web", "allow_remote", "", "", "Allow binding beyond loopback; every request (reads too) still needs the token."),
    ("web", "header_read_timeout", "", "", "How long a client may take to send a request's headers."),
    ("web", "idle_timeout", "", "", "How long a connection may stay open with no request in progress."),
    ("web.github_login", "client_id", "", "required", "The GitHub OAuth app's client id."),
    ("web.github_login", "client_secret_env", "", "\"EXECUTOR_GITHUB_CLIENT_SECRET\"", "The variable holding the OAuth app's client secret (read when serving starts)."),
    ("web.github_login", "url", "string", "\"https://github.com\"", "GitHub's web address, where people authorize the app (GitHub Enterprise Server: its own; a test points it at a fake). The user is read from `github.api_url`."),
    ("gitlab", "url", "string", "\"https://gitlab.com\"", "The instance's address (gitlab.com or self-managed): REST under `/api/v4`, GraphQL at `/api/graphql`."),
    ("gitlab", "token_env", "list of strings", "[\"GITLAB_TOKEN\"]", "Variables that may hold an access token with the `api` scope; the first one set wins."),
    ("gitlab", "batch_size", "integer", "25", "Merge requests observed per GraphQL request (at most 100); a batch GitLab refuses as too complex is asked again in halves."),
    ("gitlab", "check_grace", "duration", "\"60s\"", "A head with no pipeline gets this long before CI is triggered."),
    ("gitlab", "request_timeout", "duration", "\"30s\"", "How long one request to GitLab may take."),
    ("gitlab", "webhook_secret_env", "string", "\"EXECUTOR_GITLAB_WEBHOOK_SECRET\"", "The variable holding the secret token GitLab sends as `X-Gitlab-Token` to `/webhooks/gitlab`. Unset: deliveries are refused."),
    ("cluster", "max_workers", "", "required", "Live agent processes on all hosts together. Needs PostgreSQL."),
    ("sources", "name", "", "required", "Recorded as each task's `source`; `intake.qualifying_sources` and the filters name it."),
    ("sources", "kind", "", "required", "`asana`, `github_issues`, `gitlab_issues`, `linear`, `jira` or `file`."),
    ("sources", "repo", "", "\"\"", "The repository (a key of `[repos]`) its tasks are worked in; empty: the only repository."),
    ("sources", "token_env", "string", "~`ASANA_TOKEN` (asana), `LINEAR_API_KEY` (linear), `JIRA_API_TOKEN` (jira)", "Asana, Linear, Jira: the variable holding the personal access token, API key or API token."),
    ("sources", "api_url", "string", "~the tracker's own API", "Asana, Linear: the API base or endpoint (a test points it at a fake)."),
    ("sources", "projects", "", "[]", "Asana: project gids whose tasks to fetch. Linear: project names (issues of any of them)."),
    ("sources", "sections", "list of strings", "[]", "Asana: section gids whose tasks to fetch."),
    ("sources", "user_task_list", "string", "\"\"", "Asana: a user task list gid (\"My Tasks\")."),
    ("sources", "github", "", "\"\"", "GitHub Issues: `owner/name` (the API and token are `[github]`'s)."),
    ("sources", "gitlab", "", "\"\"", "GitLab issues: the project's full path, `group/sub/project` (the instance and token are `[gitlab]`'s); see docs/trackers.md."),
    ("sources", "milestone", "string", "\"\"", "GitLab issues: only issues in the milestone of this title."),
    ("sources", "labels", "", "[]", "GitHub Issues, GitLab issues, Linear: only issues with all these labels."),
    ("sources", "teams", "", "[]", "Linear: team keys (`ENG`) whose issues to fetch; none: every team the key can read."),
    ("sources", "states", "", "[]", "Linear: only issues in these workflow states (by name); none: every state not of type completed or canceled."),
    ("sources", "assignee", "", "\"\"", "Linear: only issues assigned to this email, or to the key's own user with `\"me\"`. GitLab issues: to this username, or to the token's own user with `\"me\"`."),
    ("sources", "state", "string", "\"open\"", "GitHub Issues: `open` or `all`. GitLab issues: `opened` (`open` says the same) or `all`."),
    ("sources", "path", "", "\"\"", "File: a JSON Lines or CSV file (gid, name, notes, completed, assignee, url, modified_at), read whole at every intake; `~/` is the home directory, a relative path is read beside the config file."),
    ("sources", "writeback", "", "~`[\"pr_opened\", \"complete\", \"abandoned\", \"plan\", \"question\"]` (a file source: none)", "The events the tracker is told of: `pr_opened`, `complete`, `abandoned`, `plan`, `question`, `skipped`, `approved`, `merged`; `[]`: none."),
    ("sources", "writeback_timeout", "", "\"30s\"", "How long one write-back request may take before it counts as failed (and is looked for in the tracker before it is sent again)."),
    ("sources", "writeback_sections", "", "{}", "Asana: the section (gid) a task is moved to at an event it is told of."),
    ("sources", "writeback_custom_fields", "", "{}", "Asana: custom fields set on the task at an event, by field gid: a text value or an enum option's gid."),
    ("sources", "writeback_complete_on_merge", "", "false", "Asana: mark the task complete when its pull request merges (with `merged` in `writeback`)."),
    ("sources", "answerers", "", "[]", "Asana, Jira, GitLab issues: the people (Asana user gids; Jira Cloud account ids, Data Center user names; GitLab usernames) whose comment on a task answers the open question of its run; none: a comment in the tracker answers nothing."),
    ("sources", "writeback_states", "", "{}", "Linear: the workflow state (by name, in the issue's team) an issue moves to at an event it is told of."),
    ("sources", "base_url", "string", "\"\"", "Jira: the site, e.g. `https://yourco.atlassian.net` (Cloud) or a Data Center's address; every Jira source on one site."),
    ("sources", "jql", "string", "\"\"", "Jira: the query selecting the issues, e.g. `project = APP AND status = 'To Do'` (an `ORDER BY` is replaced); see docs/jira.md."),
    ("sources", "auth", "string", "\"basic\"", "Jira: `basic` (Cloud: `email` and an API token, REST API v3) or `bearer` (Data Center: a personal access token, REST API v2)."),
    ("sources", "email", "string", "\"\"", "Jira Cloud: the Atlassian account the API token belongs to."),
    ("sources", "writeback_transitions", "", "{}", "Jira: the transition (by its name or the status it leads to) an issue takes at an event it is told of."),
    ("intake", "assignee", "string", "\"\"", "The configured user, for `\"$assignee\"` in a filter."),
    ("intake", "qualifying_sources", "list of strings", "[]", "When not empty, only tasks from these sources go on to the filters and the analyzer (the others are skipped as `source_not_qualifying`)."),
    ("filters", "name", "string", "required", "Recorded on each task the rule skips; `queue show` names it."),
    ("filters", "why", "string", "\"\"", "Why the rule skips, in words."),
    ("filters", "when", "table", "required", "The rule: an operator (`field` with `contains`, `matches`, `equals`, `in`, `is_empty`, `older_than`) or a combinator (`all`, `any`, `not`); see docs/trackers.md and `src/filter.rs`."),
    ("repos.NAME", "path", "", "required", ""),
    ("repos.NAME", "forge", "", "\"local\"", ""),
    ("repos.NAME", "base", "", "\"main\"", "The base branch pull requests are made against."),
    ("repos.NAME", "ci_command", "", "[]", ""),
    ("repos.NAME", "ci_env", "", "[]", ""),
    ("repos.NAME", "required_checks", "", "[]", ""),
    ("repos.NAME", "required_labels", "", "[]", ""),
    ("repos.NAME", "trusted_authors", "", "[]", ""),
    ("repos.NAME", "review_rules", "", "[]", ""),
    ("repos.NAME", "acceptance_criteria", "", "[]", ""),
    ("repos.NAME", "mark_ready", "", "false", ""),
    ("repos.NAME", "plan", "", "\"off\"", "`required`: a `plan` worker writes a plan, reading only, that a person approves (or sends back) before any code; a task's own `executor plan set` wins."),
    ("repos.NAME", "github", "", "\"\"", "GitHub: the repository as `owner/name`."),
    ("repos.NAME", "gitlab", "", "\"\"", "GitLab: the project's full path, `group/project` or `group/subgroup/project`."),
    ("repos.NAME", "remote", "", "\"origin\"", "GitHub, GitLab: the git remote executor pushes branches to."),
    ("repos.NAME", "ci_trigger", "", "\"\"", "GitHub: how CI is started when a head has no checks after `github.check_grace`: `\"\"` (it starts on push), `workflow:FILE` (workflow_dispatch at the branch), `rerun` (re-run the failed jobs of the head's last workflow run) or `rerun:FILE`. GitLab: `\"\"` (a pipeline starts on push), `pipeline` (create one for the branch) or `retry` (retry the head pipeline's failed jobs)."),
    ("repos.NAME", "trust_associations", "", "[]", ""),
];

/// Tables only the template's prose mentions; they come after the template's own, in this order.
const TABLES_NOT_IN_TEMPLATE: &[(&str, &str)] = &[
    ("intake", "Which tasks go on to the filters: the configured user and the qualifying sources."),
    (
        "filters",
        "Named skip rules, evaluated in order before any model call; the first that matches skips the task with its name recorded. `executor init` appends the seed's rules, commented out.",
    ),
];

/// Every table and its keys, in the template's order.
pub fn reference() -> (Vec<Table>, Vec<Key>) {
    let (mut tables, mut keys) = from_template(TEMPLATE);
    for (name, about) in TABLES_NOT_IN_TEMPLATE {
        tables.push(Table { name: name.to_string(), written: false, about: about.to_string() });
    }
    for &(table, key, kind, default, meaning) in MORE {
        let at = keys.iter().position(|k| k.table == table && k.key == key);
        let entry = match at {
            Some(i) => &mut keys[i],
            None => {
                keys.push(Key {
                    table: table.into(),
                    key: key.into(),
                    kind: kind.into(),
                    default: Default::Required,
                    meaning: String::new(),
                });
                keys.last_mut().expect("just pushed")
            }
        };
        if !kind.is_empty() {
            entry.kind = kind.into();
        }
        entry.default = match default {
            "" => entry.default.clone(),
            "required" => Default::Required,
            words if words.starts_with('~') => Default::Words(words[1..].into()),
            value => Default::Value(value.into()),
        };
        if !meaning.is_empty() {
            entry.meaning = meaning.into();
        }
    }
    // Keys in the order of their tables.
    keys.sort_by_key(|k| tables.iter().position(|t| t.name == k.table).unwrap_or(usize::MAX));
    (tables, keys)
}

/// The name a template table goes by in the reference: one `NAME` for every repository.
fn table_name(header: &str) -> String {
    match header.split_once('.') {
        Some(("repos", _)) => "repos.NAME".into(),
        _ => header.into(),
    }
}

/// Reads the template: `[table]` and `key = value` lines (and, after `# [table]`, their commented
/// examples), each key's meaning being the comment just above it or beside it.
fn from_template(text: &str) -> (Vec<Table>, Vec<Key>) {
    let mut tables: Vec<Table> = Vec::new();
    let mut keys: Vec<Key> = Vec::new();
    let mut comment: Vec<String> = Vec::new();
    let mut current: Option<(String, bool)> = None;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line == "#" {
            comment.clear();
            continue;
        }
        let (written, body) = match line.strip_prefix('#') {
            Some(rest) => (false, rest.trim()),
            None => (true, line),
        };
        if let Some(header) = header_of(body) {
            let name = table_name(header);
            if !tables.iter().any(|t| t.name == name) {
                tables.push(Table { name: name.clone(), written, about: comment.join(" ") });
            }
            comment.clear();
            current = Some((name, written));
            continue;
        }
        // A written table's keys are written lines; an example table's are commented ones.
        let in_table = current.as_ref().is_some_and(|(_, w)| *w == written);
        if let (Some((table, _)), Some((key, value, beside))) = (current.as_ref(), key_line(body))
            && in_table
        {
            if !keys.iter().any(|k| &k.table == table && k.key == key) {
                let meaning = beside.unwrap_or_else(|| comment.join(" "));
                keys.push(Key {
                    table: table.clone(),
                    key: key.into(),
                    kind: kind_of(value),
                    default: Default::Value(value.into()),
                    meaning,
                });
            }
            comment.clear();
            continue;
        }
        if !written {
            comment.push(body.to_string());
        }
    }
    (tables, keys)
}

/// `x` of a line `[x]` or `[[x]]`.
fn header_of(body: &str) -> Option<&str> {
    let inner = body.strip_prefix('[')?.strip_suffix(']')?;
    let inner = inner.strip_prefix('[').and_then(|i| i.strip_suffix(']')).unwrap_or(inner);
    inner.chars().all(|c| c.is_ascii_lowercase() || c == '_' || c == '.').then_some(inner)
}

/// `(key, value, the comment beside it)` of `key = value  # comment`, when the value is TOML.
fn key_line(body: &str) -> Option<(&str, &str, Option<String>)> {
    let (key, rest) = body.split_once('=')?;
    let key = key.trim();
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
        return None;
    }
    let rest = rest.trim();
    // The value ends where a comment begins: the first `  #` whose left side reads as TOML.
    let mut cuts: Vec<usize> = rest.match_indices("  #").map(|(i, _)| i).collect();
    cuts.push(rest.len());
    cuts.into_iter().find_map(|cut| {
        let value = rest[..cut].trim();
        toml::from_str::<toml::Table>(&format!("v = {value}")).ok()?;
        let beside = rest[cut..].trim().trim_start_matches('#').trim();
        Some((key, value, (!beside.is_empty()).then(|| beside.to_string())))
    })
}

/// The type a value's TOML says, a string that reads as a duration being a `duration`.
fn kind_of(value: &str) -> String {
    let parsed = toml::from_str::<toml::Table>(&format!("v = {value}")).ok();
    let kind = match parsed.as_ref().and_then(|t| t.get("v")) {
        Some(toml::Value::String(s)) if !s.is_empty() && s.parse::<super::Duration>().is_ok() => "duration",
        Some(toml::Value::String(_)) => "string",
        Some(toml::Value::Integer(_)) => "integer",
        Some(toml::Value::Float(_)) => "number",
        Some(toml::Value::Boolean(_)) => "boolean",
        Some(toml::Value::Array(_)) => "list of strings",
        Some(toml::Value::Table(_)) => "table",
        _ => "value",
    };
    kind.into()
}

/// The heading of a table in the reference: `[runner]`, `[[sources]]`.
pub fn heading(table: &str) -> String {
    match table {
        "sources" | "filters" => format!("[[{table}]]"),
        _ => format!("[{table}]"),
    }
}

/// A cell of a Markdown table: pipes escaped, on one line.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The default as the reference shows it.
pub fn shown(default: &Default) -> String {
    match default {
        Default::Value(v) => format!("`{v}`"),
        Default::Required => "required".into(),
        Default::Words(w) => w.clone(),
    }
}

/// docs/configuration.md.
pub fn markdown() -> String {
    let (tables, keys) = reference();
    let mut out = String::from(
        "# Configuration\n\n\
         <!-- Generated by `executor config reference > docs/configuration.md`. Do not edit: \
         tests/docs_config_reference.rs fails when this file and the command's output differ. -->\n\n\
         Every key of `executor.toml`, with its type, its default (what leaving the key out gives) and what it \
         does. The config is found at `--config`, `$EXECUTOR_CONFIG`, `./executor.toml`, then \
         `~/.config/executor/executor.toml`; without one the defaults apply. `executor init` writes every \
         table below that is not marked *example* with each key at its default and a comment; \
         `executor config show` prints the effective config (secrets masked) and where each value came \
         from. Durations are written like `\"90s\"`, `\"30m\"`, `\"3h\"`.\n\n**Contents**\n\n",
    );
    for t in &tables {
        let h = heading(&t.name);
        let anchor: String = h
            .to_lowercase()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
            .collect();
        out.push_str(&format!("- [`{h}`](#{anchor})\n"));
    }
    for t in &tables {
        out.push_str(&format!("\n## `{}`\n\n", heading(&t.name)));
        if !t.written {
            out.push_str("*Example: `executor init` does not write this table.* ");
        }
        if !t.about.is_empty() {
            out.push_str(&t.about);
        }
        if !t.written || !t.about.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str("| key | type | default | meaning |\n|---|---|---|---|\n");
        for k in keys.iter().filter(|k| k.table == t.name) {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                k.key,
                k.kind,
                cell(&shown(&k.default)),
                cell(&k.meaning)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_beside_a_value_is_not_part_of_it() {
        assert_eq!(
            key_line("kind = \"asana\"   # a token"),
            Some(("kind", "\"asana\"", Some("a token".into())))
        );
        assert_eq!(key_line("x = [\"a  #b\"]"), Some(("x", "[\"a  #b\"]", None)));
        assert_eq!(key_line("Empty: the user's data directory"), None);
    }

    #[test]
    fn every_key_has_a_type_and_a_meaning() {
        let (_, keys) = reference();
        for k in &keys {
            assert!(!k.meaning.is_empty() && k.kind != "value", "{}.{}: {k:?}", k.table, k.key);
        }
    }
}
