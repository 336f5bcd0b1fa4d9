//! A Jira source's keys: the site, the query, the credential, and the transitions of write-back.

use super::SourceConfig;

/// A Jira source: an http(s) `base_url`, a query, `email` for Cloud's basic auth, transitions that
/// can be named, at events that are told; and every Jira source on the same site, since a task's gid
/// is the id, which is unique only within one site.
pub(super) fn validate_jira(
    s: &SourceConfig,
    sources: &[SourceConfig],
    key: &dyn Fn(&str) -> String,
) -> Result<(), String> {
    let asanas = !s.writeback_sections.is_empty()
        || !s.writeback_custom_fields.is_empty()
        || s.writeback_complete_on_merge;
    if asanas || !s.writeback_states.is_empty() {
        return Err(format!(
            "{}: a Jira issue moves through writeback_transitions (e.g. {{ pr_opened = \"In Progress\", \
             complete = \"In Review\", merged = \"Done\" }})",
            key("writeback_sections")
        ));
    }
    let others = !s.projects.is_empty()
        || !s.sections.is_empty()
        || !s.user_task_list.is_empty()
        || !s.github.is_empty()
        || !s.path.is_empty()
        || !s.labels.is_empty()
        || !s.assignee.is_empty();
    if others {
        return Err(format!(
            "{}: a Jira source selects its issues with jql alone (e.g. project = APP AND labels = executor)",
            key("projects")
        ));
    }
    let site = site_of(&s.base_url).ok_or_else(|| {
        format!("{}: must be the Jira site's address, e.g. https://yourco.atlassian.net", key("base_url"))
    })?;
    let first = sources.iter().filter(|o| o.kind == "jira").find_map(|o| site_of(&o.base_url));
    if first.as_deref().is_some_and(|first| first != site) {
        return Err(format!(
            "{}: every Jira source must be on one site ({}): a task's gid is the issue's id, unique only \
             within a site",
            key("base_url"),
            first.unwrap_or_default()
        ));
    }
    if s.jql.trim().is_empty() || s.jql.contains('\0') {
        return Err(format!(
            "{}: name the issues to fetch, e.g. project = APP AND status = 'To Do'",
            key("jql")
        ));
    }
    match s.auth.as_str() {
        "basic" if s.email.trim().is_empty() || !s.email.contains('@') => {
            return Err(format!(
                "{}: Jira Cloud's API token goes with the email of its Atlassian account; or set auth = \
                 \"bearer\" for a Data Center personal access token",
                key("email")
            ));
        }
        "basic" | "bearer" => {}
        _ => return Err(format!("{}: must be \"basic\" (Cloud) or \"bearer\" (Data Center)", key("auth"))),
    }
    let blank = |v: &String| v.trim().is_empty() || v.chars().any(char::is_control);
    if let Some((event, name)) = s.writeback_transitions.iter().find(|(_, name)| blank(name)) {
        return Err(format!(
            "{}: {name:?} for {event} is not a transition's name",
            key("writeback_transitions")
        ));
    }
    if let Some(event) = s.writeback_transitions.keys().find(|e| !s.writeback_events().contains(e)) {
        return Err(format!(
            "{}: an issue moves at {event} only when {event} is told: add \"{event}\" to writeback",
            key("writeback_transitions")
        ));
    }
    if s.token_env.is_empty() {
        return Err(format!("{}: name the variable holding the Jira token", key("token_env")));
    }
    Ok(())
}

/// `scheme://host:port` of an http(s) address, lowercased; `None` for anything else.
fn site_of(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url.trim()).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
        return None;
    }
    Some(parsed.origin().ascii_serialization().to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::super::Config;

    fn parse(extra: &str) -> Result<Config, String> {
        Config::parse(&format!(
            "[[sources]]\nname = \"jira\"\nkind = \"jira\"\nbase_url = \"https://acme.atlassian.net\"\n\
             jql = \"project = APP\"\nemail = \"bot@acme.com\"\n{extra}"
        ))
        .map_err(|e| e.to_string())
    }

    #[test]
    fn a_jira_source_has_its_defaults_and_is_checked() {
        let config = parse("").unwrap();
        let s = &config.sources[0];
        assert_eq!((s.token_env.as_str(), s.auth.as_str()), ("JIRA_API_TOKEN", "basic"));
        assert!(s.writes_back());
        parse("writeback = [\"pr_opened\", \"merged\"]\nwriteback_transitions = { merged = \"Done\" }")
            .unwrap();
        for (extra, complaint) in [
            ("writeback_transitions = { merged = \"Done\" }", "add \"merged\" to writeback"),
            ("auth = \"oauth\"", "\"basic\" (Cloud) or \"bearer\""),
            ("teams = [\"ENG\"]", "Linear source's"),
            ("labels = [\"x\"]", "jql alone"),
            ("writeback_transitions = { complete = \" \" }", "not a transition's name"),
        ] {
            let error = parse(extra).unwrap_err();
            assert!(error.contains(complaint), "{extra}: {error}");
        }
        let no_email = Config::parse(
            "[[sources]]\nname = \"j\"\nkind = \"jira\"\nbase_url = \"https://jira.acme.com\"\njql = \"project = APP\"\n",
        )
        .unwrap_err();
        assert!(no_email.to_string().contains("bearer"), "{no_email}");
        Config::parse(
            "[[sources]]\nname = \"j\"\nkind = \"jira\"\nbase_url = \"https://jira.acme.com\"\njql = \"project = APP\"\nauth = \"bearer\"\n",
        )
        .unwrap();
        let two_sites = parse(
            "[[sources]]\nname = \"other\"\nkind = \"jira\"\nbase_url = \"https://other.atlassian.net\"\n\
             jql = \"project = OPS\"\nemail = \"bot@acme.com\"\n",
        )
        .unwrap_err();
        assert!(two_sites.contains("one site"), "{two_sites}");
        let not_jira =
            Config::parse("[[sources]]\nname = \"f\"\nkind = \"file\"\npath = \"x\"\njql = \"x\"\n")
                .unwrap_err();
        assert!(not_jira.to_string().contains("a Jira source's"), "{not_jira}");
    }
}
