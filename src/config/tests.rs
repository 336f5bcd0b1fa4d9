use super::*;

#[test]
fn the_template_states_exactly_the_defaults() {
    assert_eq!(Config::parse(TEMPLATE).unwrap(), Config::default());
    assert_eq!(Config::parse("").unwrap(), Config::default());
}

#[test]
fn durations_read_as_people_write_them() {
    let c = Config::parse("[worker]\nidle_timeout = \"45m\"\nhard_timeout = \"1h 30m\"").unwrap();
    assert_eq!(c.worker.idle_timeout.std().as_secs(), 45 * 60);
    assert_eq!(c.worker.hard_timeout.std().as_secs(), 90 * 60);
}

#[test]
fn errors_name_the_line_and_the_key() {
    let err = Config::parse("[runner]\nmax_workers = 2\nloop_interval = \"soon\"\n").unwrap_err();
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("loop_interval"), "{err}");
    assert!(err.contains("\"30m\""), "{err}");

    let err = Config::parse("[runner]\nmax_worker = 2\n").unwrap_err();
    assert!(err.contains("line 2") && err.contains("unknown field `max_worker`"), "{err}");
    assert!(err.contains("max_workers"), "lists what is allowed: {err}");

    let err = Config::parse("[runner]\nmax_workers = 0\n").unwrap_err();
    assert_eq!(err, "key `runner.max_workers`: must be at least 1");

    let err = Config::parse("[database]\nurl = \"mysql://x\"\n").unwrap_err();
    assert!(err.starts_with("key `database.url`"), "{err}");

    let err = Config::parse("[repos.app]\npath = \"/src/app\"\nforge = \"gitea\"\n").unwrap_err();
    assert_eq!(err, "key `repos.app.forge`: must be \"local\", \"github\" or \"gitlab\"");

    let err = Config::parse("[repos.app]\npath = \"/src/app\"\nforge = \"gitlab\"\n").unwrap_err();
    assert!(err.starts_with("key `repos.app.gitlab`: must be the project's full path"), "{err}");
    let gitlab = "[repos.app]\npath = \"/src/app\"\nforge = \"gitlab\"\ngitlab = \"group/sub/app\"\n";
    let err = Config::parse(&format!("{gitlab}ci_trigger = \"workflow:ci.yml\"\n")).unwrap_err();
    assert!(err.starts_with("key `repos.app.ci_trigger`: must be \"\" (a pipeline starts"), "{err}");
    assert!(Config::parse(&format!("{gitlab}ci_trigger = \"retry\"\n")).is_ok());
}

#[test]
fn cluster_settings_need_postgresql_and_host_names_stay_plain() {
    // SQLite is one host's database: a cluster limit there would promise what it cannot keep.
    for url in ["", "sqlite:///tmp/x.db"] {
        let text = format!("[database]\nurl = {url:?}\n[cluster]\nmax_workers = 3\n");
        let err = Config::parse(&text).unwrap_err();
        assert!(err.starts_with("key `cluster`: needs PostgreSQL"), "{err}");
        assert!(err.contains("database.url") && err.contains("runner.max_workers"), "names the fix: {err}");
    }
    let c = Config::parse("[database]\nurl = \"postgres://db/x\"\n[cluster]\nmax_workers = 3\n").unwrap();
    assert_eq!(c.cluster, Some(Cluster { max_workers: 3 }));
    let err =
        Config::parse("[database]\nurl = \"postgres://db/x\"\n[cluster]\nmax_workers = 0\n").unwrap_err();
    assert_eq!(err, "key `cluster.max_workers`: must be at least 1");

    assert_eq!(Config::parse("[runner]\nhost_name = \"alpha\"\n").unwrap().host_name(), "alpha");
    assert!(!Config::default().host_name().is_empty(), "the machine's name by default");
    for bad in ["a/b", "a:b", " a", "a\\n"] {
        let err = Config::parse(&format!("[runner]\nhost_name = \"{bad}\"\n")).unwrap_err();
        assert!(err.starts_with("key `runner.host_name`"), "{bad:?}: {err}");
    }
    let err = Config::parse("[runner]\nlease_ttl = \"100ms\"\n").unwrap_err();
    assert_eq!(err, "key `runner.lease_ttl`: must be at least 1s");
}

#[test]
fn load_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("executor.toml");
    std::fs::write(&path, "[runner\n").unwrap();
    let err = Config::load(&path).unwrap_err().to_string();
    assert!(err.starts_with(&format!("invalid config {}", path.display())), "{err}");
    let err = Config::load(&dir.path().join("missing.toml")).unwrap_err().to_string();
    assert!(err.contains("cannot read config") && err.contains("missing.toml"), "{err}");
}

#[test]
fn paths_derive_from_the_data_dir() {
    let c = Config::parse("[paths]\ndata_dir = \"/var/lib/ex\"\n").unwrap();
    assert_eq!(c.database_url(), "sqlite:///var/lib/ex/executor.db");
    assert_eq!(c.logs_dir(), PathBuf::from("/var/lib/ex/logs"));
    assert_eq!(c.worktrees_root(), PathBuf::from("/var/lib/ex/worktrees"));
    assert_eq!(c.env_file(), PathBuf::from("/var/lib/ex/scheduled.env"));
}

#[test]
fn github_repositories_are_checked() {
    let repo = |extra: &str| format!("[repos.app]\npath = \"/src/app\"\nforge = \"github\"\n{extra}");
    let err = Config::parse(&repo("")).unwrap_err();
    assert!(err.starts_with("key `repos.app.github`"), "{err}");
    for bad in ["octo", "octo/", "/app", "octo/app/x", "octo/..", "oc to/app"] {
        let err = Config::parse(&repo(&format!("github = {bad:?}\n"))).unwrap_err();
        assert!(err.starts_with("key `repos.app.github`"), "{bad}: {err}");
    }
    let ok = Config::parse(&repo("github = \"octo/app.rs\"\n")).unwrap();
    assert_eq!(ok.repos["app"].github_slug(), Some(("octo", "app.rs")));
    assert_eq!(ok.repos["app"].remote, "origin");

    for bad in ["workflow:", "workflow:../x.yml", "always", "workflow:a b.yml", "rerun:", "rerun:a/b.yml"] {
        let err = Config::parse(&repo(&format!("github = \"o/a\"\nci_trigger = {bad:?}\n"))).unwrap_err();
        assert!(err.starts_with("key `repos.app.ci_trigger`"), "{bad}: {err}");
    }
    for good in ["", "rerun", "rerun:ci.yml", "workflow:ci.yml"] {
        Config::parse(&repo(&format!("github = \"o/a\"\nci_trigger = {good:?}\n"))).unwrap();
    }
    let err = Config::parse(&repo("github = \"o/a\"\nremote = \"--upload-pack=x\"\n")).unwrap_err();
    assert!(err.starts_with("key `repos.app.remote`"), "{err}");

    let err = Config::parse("[github]\nbatch_size = 101\n").unwrap_err();
    assert!(err.starts_with("key `github.batch_size`"), "{err}");
    let err = Config::parse("[github]\napp_id = 7\n").unwrap_err();
    assert!(err.contains("private_key_path") && err.contains("installation_id"), "{err}");
}

#[test]
fn the_graphql_endpoint_derives_from_the_rest_base() {
    let c = Config::default();
    assert_eq!(c.github.graphql_endpoint(), "https://api.github.com/graphql");
    let ghe = Config::parse("[github]\napi_url = \"https://ghe.example/api/v3/\"\n").unwrap();
    assert_eq!(ghe.github.graphql_endpoint(), "https://ghe.example/api/graphql");
    let set = Config::parse("[github]\ngraphql_url = \"http://127.0.0.1:9/gql\"\n").unwrap();
    assert_eq!(set.github.graphql_endpoint(), "http://127.0.0.1:9/gql");
}

#[test]
fn the_seed_rules_appended_to_the_template_load_and_compile() {
    let text = format!("{TEMPLATE}\n{}", crate::filter::SEED_RULES);
    let config = Config::parse(&text).unwrap();
    assert_eq!(config.filters.len(), 5);
    assert_eq!(config.intake.assignee, "alex");
    assert_eq!(config.compiled_filters().unwrap().names().count(), 5);
}

#[test]
fn sources_are_checked_naming_the_key() {
    let base = "[repos.app]\npath = \"/src/app\"\n";
    let cases = [
        ("[[sources]]\nname = \"a\"\nkind = \"trello\"\n", "sources[0].kind"),
        ("[[sources]]\nname = \"a\"\nkind = \"jira\"\n", "sources[0].base_url"),
        ("[[sources]]\nname = \"a\"\nkind = \"asana\"\n", "sources[0].projects"),
        ("[[sources]]\nname = \"a\"\nkind = \"file\"\n", "sources[0].path"),
        ("[[sources]]\nname = \"a\"\nkind = \"github_issues\"\ngithub = \"nope\"\n", "sources[0].github"),
        ("[[sources]]\nname = \"a\"\nkind = \"file\"\npath = \"x\"\nrepo = \"web\"\n", "sources[0].repo"),
        (
            "[[sources]]\nname = \"a\"\nkind = \"file\"\npath = \"x\"\n[[sources]]\nname = \"a\"\nkind = \"file\"\npath = \"y\"\n",
            "sources[1].name",
        ),
        ("[[filters]]\nname = \"f\"\n[filters.when]\nfield = \"colour\"\ncontains = \"x\"\n", "[[filters]]"),
        ("[analyzer]\nconcurrency = 0\n", "analyzer.concurrency"),
    ];
    for (text, key) in cases {
        let err = Config::parse(&format!("{base}{text}")).unwrap_err();
        assert!(err.contains(key), "{key} not named in: {err}");
    }
    let ok = "[[sources]]\nname = \"inbox\"\nkind = \"asana\"\nprojects = [\"1\"]\nrepo = \"app\"\n";
    assert_eq!(Config::parse(&format!("{base}{ok}")).unwrap().sources[0].token_env, "ASANA_TOKEN");
}

#[test]
fn write_back_keys_are_checked_naming_the_key() {
    use crate::domain::WritebackEvent;
    let asana = "[[sources]]\nname = \"a\"\nkind = \"asana\"\nprojects = [\"1\"]\n";
    let cases = [
        (format!("{asana}writeback = [\"shipped\"]\n"), "writeback"),
        ("[[sources]]\nname = \"a\"\nkind = \"file\"\npath = \"x\"\nwriteback = [\"complete\"]\n".into(), "sources[0].writeback"),
        (format!("{asana}writeback_sections = {{ complete = \"abc\" }}\n"), "sources[0].writeback_sections"),
        (format!("{asana}writeback_custom_fields = {{ complete = {{ \"x\" = \"1\" }} }}\n"), "sources[0].writeback_custom_fields"),
        (format!("{asana}writeback_complete_on_merge = true\n"), "sources[0].writeback_complete_on_merge"),
        (format!("{asana}answerers = [\"alex\"]\n"), "sources[0].answerers"),
        ("[[sources]]\nname = \"a\"\nkind = \"github_issues\"\ngithub = \"o/n\"\nanswerers = [\"1\"]\n".into(), "sources[0].answerers"),
        (
            "[[sources]]\nname = \"a\"\nkind = \"github_issues\"\ngithub = \"o/n\"\nwriteback_sections = { complete = \"1\" }\n".into(),
            "sources[0].writeback_sections",
        ),
    ];
    for (text, key) in cases {
        let err = Config::parse(&text).unwrap_err();
        assert!(err.contains(key), "{key} not named in: {err}");
    }
    let defaults = Config::parse(asana).unwrap();
    assert_eq!(defaults.sources[0].writeback_events(), WritebackEvent::DEFAULT);
    assert_eq!(defaults.sources[0].writeback_timeout.std(), std::time::Duration::from_secs(30));
    let none = Config::parse(&format!("{asana}writeback = []\n")).unwrap();
    assert!(none.sources[0].writeback_events().is_empty());
    let file = Config::parse("[[sources]]\nname = \"f\"\nkind = \"file\"\npath = \"x\"\n").unwrap();
    assert!(file.sources[0].writeback_events().is_empty(), "a file has no tracker");
    let merged = format!("{asana}writeback = [\"merged\"]\nwriteback_complete_on_merge = true\n");
    assert!(Config::parse(&merged).unwrap().sources[0].writeback_complete_on_merge);
}

#[test]
fn a_gitlab_issues_source_is_checked_naming_the_key() {
    let gl = "[[sources]]\nname = \"g\"\nkind = \"gitlab_issues\"\n";
    let cases = [
        (gl.to_string(), "sources[0].gitlab"),
        (format!("{gl}gitlab = \"app\"\n"), "sources[0].gitlab"),
        (format!("{gl}gitlab = \"acme/app.git\"\n"), "sources[0].gitlab"),
        (format!("{gl}gitlab = \"acme/app\"\nstate = \"closed\"\n"), "sources[0].state"),
        (format!("{gl}gitlab = \"acme/app\"\nlabels = [\"a,b\"]\n"), "sources[0].labels"),
        (format!("{gl}gitlab = \"acme/app\"\nlabels = [\"Any\"]\n"), "sources[0].labels"),
        (format!("{gl}gitlab = \"acme/app\"\nassignee = \"a@b.c d\"\n"), "sources[0].assignee"),
        (format!("{gl}gitlab = \"acme/app\"\nanswerers = [\"al ex\"]\n"), "sources[0].answerers"),
        (format!("{gl}gitlab = \"acme/app\"\nprojects = [\"1\"]\n"), "sources[0].projects"),
        (
            format!("{gl}gitlab = \"acme/app\"\nwriteback_sections = {{ complete = \"1\" }}\n"),
            "sources[0].writeback_sections",
        ),
        (
            "[[sources]]\nname = \"a\"\nkind = \"github_issues\"\ngithub = \"o/n\"\nmilestone = \"v1\"\n"
                .into(),
            "sources[0].kind",
        ),
    ];
    for (text, key) in cases {
        let err = Config::parse(&text).unwrap_err();
        assert!(err.contains(key), "{key} not named in: {err}");
    }
    let ok = format!(
        "{gl}gitlab = \"acme/platform/app\"\nlabels = [\"executor\"]\nassignee = \"me\"\nmilestone = \"v1.0\"\n\
         answerers = [\"alex.doe\"]\n"
    );
    let config = Config::parse(&ok).unwrap();
    let source = &config.sources[0];
    assert!(source.writes_back() && !source.has_token_env());
    assert_eq!(source.writeback_events(), crate::domain::WritebackEvent::DEFAULT);
    assert_eq!((source.gitlab.as_str(), source.milestone.as_str()), ("acme/platform/app", "v1.0"));
}

#[test]
fn a_web_token_set_by_hand_must_be_long_and_plain() {
    for bad in [
        "short",
        "0123456789abcdef0123456789abcde",
        "0123456789abcdef0123456789abcdef;x=1",
        "é".repeat(32).as_str(),
    ] {
        let err = Config::parse(&format!("[web]\ntoken = {bad:?}\n")).unwrap_err();
        assert!(err.starts_with("key `web.token`: must be at least 32"), "{bad:?}: {err}");
    }
    let good = "0123456789abcdef-_.~0123456789ABCDEF";
    assert_eq!(Config::parse(&format!("[web]\ntoken = {good:?}\n")).unwrap().web.token, good);
}

#[test]
fn a_web_token_that_is_plainly_not_random_is_refused() {
    for weak in ["a".repeat(40), "ab".repeat(20), "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab".into()] {
        let err = Config::parse(&format!("[web]\ntoken = {weak:?}\n")).unwrap_err();
        assert!(
            err.starts_with("key `web.token`: is not random enough") && err.contains("openssl rand -hex 32"),
            "{weak}: {err}"
        );
    }
    // What `openssl rand -hex 16` and `-hex 32` print, and `-base64 24`.
    for random in [
        "7d9b5a1c3e0f48a2b6d1c9e4f7a05b38",
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "q1w2E3r4T5y6U7i8O9p0-aSdFgHjKlZx",
    ] {
        assert_eq!(Config::parse(&format!("[web]\ntoken = {random:?}\n")).unwrap().web.token, random);
    }
}

#[test]
fn web_hosts_and_connection_limits_are_checked() {
    let c = Config::parse("[web]\nallowed_hosts = [\"box.lan\", \"192.168.1.2\", \"[fe80::1]\"]\n").unwrap();
    assert_eq!(c.web.allowed_hosts.len(), 3);
    for bad in ["box.lan:8370", "http://box.lan", "", "[nope]"] {
        let err = Config::parse(&format!("[web]\nallowed_hosts = [{bad:?}]\n")).unwrap_err();
        assert!(err.starts_with("key `web.allowed_hosts`"), "{bad:?}: {err}");
    }
    let err = Config::parse("[web]\nmax_connections = 2\n").unwrap_err();
    assert!(err.starts_with("key `web.max_connections`"), "{err}");
    let err = Config::parse("[web]\nidle_timeout = \"10ms\"\n").unwrap_err();
    assert_eq!(err, "key `web.idle_timeout`: must be at least 1s");
}

#[test]
fn a_linear_source_gets_its_own_defaults_and_its_keys_are_checked() {
    let linear = "[[sources]]\nname = \"l\"\nkind = \"linear\"\n";
    let config = Config::parse(&format!("{linear}teams = [\"ENG\"]\nassignee = \"me\"\n")).unwrap();
    let source = &config.sources[0];
    assert_eq!(
        (source.token_env.as_str(), source.api_url.as_str()),
        ("LINEAR_API_KEY", "https://api.linear.app/graphql")
    );
    assert!(source.writes_back());
    assert_eq!(source.writeback_events(), crate::domain::WritebackEvent::DEFAULT);
    let asana = "[[sources]]\nname = \"a\"\nkind = \"asana\"\nprojects = [\"1\"]\n";
    let cases = [
        (format!("{linear}assignee = \"alex\"\n"), "sources[0].assignee"),
        (format!("{linear}teams = [\"\"]\n"), "sources[0].teams"),
        (format!("{linear}sections = [\"1\"]\n"), "sources[0].sections"),
        (format!("{linear}writeback_sections = {{ complete = \"1\" }}\n"), "sources[0].writeback_sections"),
        (format!("{linear}writeback_states = {{ complete = \" \" }}\n"), "sources[0].writeback_states"),
        (
            format!("{linear}writeback = [\"complete\"]\nwriteback_states = {{ merged = \"Done\" }}\n"),
            "add \"merged\"",
        ),
        (format!("{asana}writeback_states = {{ complete = \"Done\" }}\n"), "sources[0].kind"),
    ];
    for (text, key) in cases {
        let err = Config::parse(&text).unwrap_err();
        assert!(err.contains(key), "{key} not named in: {err}");
    }
}

/// Issue 33 item 4: `~/` in an agent's program passed `doctor` (which expanded it) and then failed every
/// start (the spawn did not). It is expanded once, when the config is read.
#[test]
fn a_tilde_in_an_agent_program_is_the_home_directory_for_every_reader() {
    let home = dirs::home_dir().expect("a home directory");
    let c = Config::parse(
        "[worker]\nagent = \"command\"\n[worker.command]\nargv = [\"~/bin/agent.sh\", \"~/not-the-program\"]\n\
         [worker.claude]\nprogram = \"~/bin/claude\"\n[worker.codex]\nprogram = \"~/bin/codex\"\n",
    )
    .unwrap();
    assert_eq!(c.worker.command.argv[0], home.join("bin/agent.sh").display().to_string());
    assert_eq!(c.worker.command.argv[1], "~/not-the-program", "an argument is the agent's to read");
    assert_eq!(c.worker.claude.program, home.join("bin/claude").display().to_string());
    assert_eq!(c.worker.codex.program, home.join("bin/codex").display().to_string());
    // A name on PATH and an absolute path are left as written.
    let plain = Config::parse("[worker.claude]\nprogram = \"claude\"\n").unwrap();
    assert_eq!(plain.worker.claude.program, "claude");
}

/// Issue 33 item 11: `loop_interval = 60` said "expected a string" without showing how to write it.
#[test]
fn a_bare_number_for_a_duration_is_answered_with_how_to_write_it() {
    let err = Config::parse("[runner]\nloop_interval = 60\n").unwrap_err();
    assert!(err.contains("\"60s\"") && err.contains("loop_interval"), "{err}");
}

/// Issue 34 item 5: a worker's cost is estimated at its own model's published price, even under the
/// `[pricing.default]` every `init`ed config has (Sonnet's $3/$15: an Opus worker came out at 60%).
#[test]
fn published_prices_come_before_a_tables_default_and_after_its_own_keys() {
    let init = Config::parse(super::TEMPLATE).unwrap();
    let p = |model: &str| {
        let price = init.pricing.price_for(model);
        (price.input, price.output)
    };
    assert_eq!(p("claude-opus-4-5-20251101"), (5.0, 25.0));
    assert_eq!(p("claude-opus-4-20250514"), (15.0, 75.0), "Opus 4 kept the old tier");
    assert_eq!(p("claude-opus-4-1-20250805"), (15.0, 75.0));
    assert_eq!(p("claude-opus-5-5"), (4.0, 20.0));
    assert_eq!(p("claude-sonnet-5"), (2.0, 10.0));
    assert_eq!(p("gpt-6-astra"), (10.0, 50.0));
    assert_eq!(p("gpt-6.1-sol-2026-09-29"), (2.0, 10.0));
    assert_eq!(p("some-local-model"), (3.0, 15.0), "unknown: the table's default");

    let own = Config::parse("[pricing.\"claude-opus\"]\ninput = 1.0\noutput = 2.0\n").unwrap();
    assert_eq!(own.pricing.price_for("claude-opus-5").input, 1.0, "the user's own key wins");
}

#[test]
fn a_repositorys_forge_chooses_the_words_for_its_changes() {
    let config = Config::parse(
        "[repos.lab]\npath = \"/src/lab\"\nforge = \"gitlab\"\ngitlab = \"group/lab\"\n\
         [repos.hub]\npath = \"/src/hub\"\nforge = \"github\"\ngithub = \"octo/hub\"\n\
         [repos.here]\npath = \"/src/here\"\n",
    )
    .unwrap();
    assert_eq!(config.words_for(Some("lab")).noun_ref(12), "merge request !12");
    assert_eq!(config.words_for(Some("hub")).noun_ref(12), "pull request #12");
    assert_eq!(config.words_for(Some("here")).short_ref(12), "PR #12");
    // A repository no longer configured, or none named among several: today's words.
    assert_eq!(config.words_for(Some("gone")).short, "PR");
    assert_eq!(config.words_for(None).short, "PR");
    let only_gitlab =
        Config::parse("[repos.lab]\npath = \"/l\"\nforge = \"gitlab\"\ngitlab = \"g/l\"\n").unwrap();
    assert_eq!(only_gitlab.words_for(None).short_ref(3), "MR !3");
    // Text about every repository at once says "merge request" only when every one is on GitLab.
    assert_eq!(only_gitlab.words_everywhere().noun, "merge request");
    assert_eq!(config.words_everywhere().noun, "pull request");
    assert_eq!(Config::default().words_everywhere().noun, "pull request");
}
