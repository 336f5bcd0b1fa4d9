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

    let err = Config::parse("[repos.app]\npath = \"/src/app\"\nforge = \"gitlab\"\n").unwrap_err();
    assert_eq!(err, "key `repos.app.forge`: must be \"local\" or \"github\"");
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
}
