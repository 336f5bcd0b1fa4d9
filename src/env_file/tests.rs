use super::*;

#[test]
fn lines_parse_like_systemd_and_a_shell_read_them() {
    let text = "# keys for cron\n\nexport ANTHROPIC_API_KEY=sk-ant-1\nIS_SANDBOX = 1\n\
                QUOTED='a b $HOME'\nDOUBLE=\"it's\"\nEMPTY=\nIS_SANDBOX=0\n";
    let vars = parse(text).unwrap();
    let get = |n: &str| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    assert_eq!(get("ANTHROPIC_API_KEY"), Some("sk-ant-1"));
    assert_eq!(get("QUOTED"), Some("a b $HOME"), "taken as written: no expansion");
    assert_eq!(get("DOUBLE"), Some("it's"));
    assert_eq!(get("EMPTY"), Some(""));
    assert_eq!(get("IS_SANDBOX"), Some("0"), "the later line wins");
    assert_eq!(vars.len(), 5);
}

#[test]
fn a_bad_line_is_named_by_number_never_shown() {
    assert_eq!(parse("A=1\nsk-ant-secret\n"), Err((2, "no `=`")));
    assert_eq!(parse("1A=x").unwrap_err().0, 1);
    assert_eq!(parse("A='open").unwrap_err(), (1, "a quote is not closed"));
    let err = EnvFileError::Syntax { path: "/e".into(), line: 2, why: "no `=`" };
    assert_eq!(err.to_string(), "/e:2: no `=` (expected NAME=value)");
}

#[test]
fn every_value_a_line_can_hold_reads_back_the_same() {
    for value in ["plain-1.2_x", "with space", "it's", "say \"hi\"", "$HOME", "", "a=b"] {
        let written = line("V", value).unwrap();
        assert_eq!(parse(&written).unwrap(), vec![("V".to_string(), value.to_string())], "{written}");
    }
    assert_eq!(line("V", "two\nlines"), None);
    assert_eq!(line("V", "both ' and \""), None);
    assert_eq!(line("not a name", "x"), None);
}

#[cfg(unix)]
#[test]
fn the_file_is_created_private_and_refused_when_others_can_read_it() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deeper/scheduled.env");
    assert!(read(&path).unwrap().is_none(), "a missing file is no error to read");
    append(&path, &[("A".into(), "1".into()), ("BAD".into(), "x\ny".into())]).unwrap();
    append(&path, &[("B".into(), "two words".into())]).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let vars = read(&path).unwrap().unwrap();
    assert_eq!(vars, vec![("A".into(), "1".into()), ("B".into(), "two words".into())]);

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = read(&path).unwrap_err().to_string();
    assert!(err.contains("mode 644") && err.contains("chmod 600"), "{err}");
    assert!(append(&path, &[]).is_err(), "never appends secrets to a file others can read");
}

#[test]
fn a_scheduled_run_lacks_what_the_shell_has_and_the_file_does_not() {
    let config: Config = toml::from_str(
        r#"
        [worker]
        pass_env = ["ANTHROPIC_API_KEY", "IS_SANDBOX", "OPENAI_API_KEY"]
        [[sources]]
        name = "work"
        kind = "asana"
        projects = ["1"]
        token_env = "ASANA_TOKEN"
        "#,
    )
    .unwrap();
    let names: Vec<String> = needed(&config).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["ANTHROPIC_API_KEY", "IS_SANDBOX", "OPENAI_API_KEY", "ASANA_TOKEN"]);
    assert!(!names.contains(&"GH_TOKEN".to_string()), "GitHub is not used: its token is not needed");

    let shell = |n: &str| match n {
        "ANTHROPIC_API_KEY" => Some("sk-ant-x".to_string()),
        "IS_SANDBOX" => Some("1".to_string()),
        "ASANA_TOKEN" => Some("2/123".to_string()),
        "OPENAI_API_KEY" => Some(String::new()),
        _ => None,
    };
    let file = [("ANTHROPIC_API_KEY".to_string(), "sk-ant-x".to_string())];
    let missing: Vec<String> = missing_from(&config, &file, shell).into_iter().map(|(n, _)| n).collect();
    assert_eq!(missing, ["IS_SANDBOX", "ASANA_TOKEN"], "an empty shell value is not missed");
}

#[test]
fn any_one_of_githubs_token_variables_will_do() {
    let config: Config = toml::from_str(
        r#"
        [worker]
        pass_env = []
        [repos.app]
        path = "/src/app"
        forge = "github"
        github = "o/app"
        "#,
    )
    .unwrap();
    let shell = |n: &str| matches!(n, "GH_TOKEN" | "GITHUB_TOKEN").then(|| "ghp_x".to_string());
    let names = |file: &[(String, String)]| -> Vec<String> {
        missing_from(&config, file, shell).into_iter().map(|(n, _)| n).collect()
    };
    assert_eq!(names(&[]), config.github.token_env, "none in the file: each the shell has is offered");
    let one = [("GITHUB_TOKEN".to_string(), "ghp_x".to_string())];
    assert!(names(&one).is_empty(), "one token in the file is enough");
    let empty = [("GITHUB_TOKEN".to_string(), String::new())];
    assert_eq!(names(&empty).len(), 2, "an empty value is no token");
}
