//! Issue 33's walkthrough: the README's quick start and "running it for real", as a newcomer follows
//! them, from a fresh `HOME` with no XDG variables (so the user's config and data directories are the
//! real defaults under it): `init`, the config moved where every directory finds it, `~` in the
//! repository's and the agent's paths, `doctor`, a task queued, approved and run to a reviewed pull
//! request by the runner *as cron starts it* (a bare environment and the environment file), and
//! `worker run` in a scratch worktree.

mod cli_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

struct Home {
    dir: tempfile::TempDir,
    /// `PATH` with a stand-in `crontab` first.
    path: String,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let bin = cli_support::fake_crontab(dir.path());
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        Home { dir, path }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `executor ARGS` in `cwd` (relative to HOME) as from the user's shell, which exports the agent's
    /// key and `IS_SANDBOX` (the shell `doctor` was checked from).
    fn command(&self, cwd: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_executor"));
        cmd.args(args)
            .current_dir(self.path().join(cwd))
            .env_clear()
            .env("HOME", self.path())
            .env("PATH", &self.path)
            .env("ANTHROPIC_API_KEY", "sk-ant-api03-walkthrough-key-0123456789")
            .env("IS_SANDBOX", "1")
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, cwd: &str, args: &[&str]) -> Output {
        self.command(cwd, args).output().unwrap()
    }

    fn ok(&self, cwd: &str, args: &[&str]) -> String {
        let out = self.run(cwd, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}{}", text(&out.stdout), text(&out.stderr));
        text(&out.stdout)
    }

    fn json(&self, cwd: &str, args: &[&str]) -> serde_json::Value {
        let out = self.run(cwd, args);
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}{}", text(&out.stdout), text(&out.stderr)))
    }

    fn crontab(&self) -> String {
        std::fs::read_to_string(self.path().join("crontab.txt")).unwrap_or_default()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn write_script(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
}

fn check<'a>(doctor: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    let checks = doctor["checks"].as_array().unwrap();
    checks.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no check {name}: {doctor}"))
}

/// The command part of the crontab's line for `job`, run as cron runs it: `sh -c` in HOME with only
/// HOME and cron's own PATH.
fn as_cron_runs(home: &Home, job: &str) -> Output {
    let tab = home.crontab();
    let line = tab.lines().find(|l| l.contains(&format!("'{job}' >>"))).unwrap_or_else(|| panic!("{tab}"));
    let command: String = line.splitn(6, ' ').nth(5).unwrap().to_string();
    Command::new("/bin/sh")
        .args(["-c", &command])
        .current_dir(home.path())
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_newcomer_goes_from_init_to_a_reviewed_pull_request_started_by_cron() {
    let home = Home::new();
    for dir in ["proj", "elsewhere", "src/app"] {
        std::fs::create_dir_all(home.path().join(dir)).unwrap();
    }
    // The repository the work happens in, at `~/src/app`.
    let app = home.path().join("src/app");
    git(&app, &["init", "-q", "-b", "main"]);
    std::fs::write(app.join("README"), "app\n").unwrap();
    git(&app, &["add", "README"]);
    git(&app, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial"]);
    // The agent, at `~/bin/agent.sh`: like Claude Code as root, it refuses to work without IS_SANDBOX.
    let pipeline = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/pipeline.sh");
    write_script(
        &home.path().join("bin/agent.sh"),
        &format!(
            "#!/bin/sh\nif [ \"$IS_SANDBOX\" != 1 ]; then echo 'refusing: IS_SANDBOX is not set' >&2; exit 3; fi\nexec {} \"$@\"\n",
            pipeline.display()
        ),
    );

    // `executor init` writes ./executor.toml and says how it is found; the newcomer follows its hint and
    // moves it to the user's config directory, where every directory finds it.
    let said = home.ok("proj", &["init"]);
    let user_config = home.path().join(".config/executor/executor.toml");
    assert!(said.contains(&format!("move it to {}", user_config.display())), "{said}");
    std::fs::create_dir_all(user_config.parent().unwrap()).unwrap();
    std::fs::rename(home.path().join("proj/executor.toml"), &user_config).unwrap();
    let mut config = std::fs::read_to_string(&user_config).unwrap();
    config = config.replacen("agent = \"claude\"", "agent = \"command\"", 1);
    config = config.replacen("argv = []", "argv = [\"~/bin/agent.sh\"]", 1);
    config.push_str(
        "\n[repos.app]\npath = \"~/src/app\"\nforge = \"local\"\n\
         ci_command = [\"true\"]\ntrusted_authors = [\"alex\"]\n",
    );
    std::fs::write(&user_config, config).unwrap();

    let doctor = home.json("elsewhere", &["doctor", "--json"]);
    assert!(check(&doctor, "config")["detail"].as_str().unwrap().contains(".config/executor"), "{doctor}");
    assert_eq!(check(&doctor, "agent")["outcome"], "pass", "`~` in the agent's path: {doctor}");
    assert_eq!(check(&doctor, "repo app")["outcome"], "pass", "`~` in the repo's path: {doctor}");
    assert_eq!(check(&doctor, "scheduled env")["outcome"], "pass", "nothing scheduled yet: {doctor}");

    // Cron: the entries load an environment file executor wrote from this shell, mode 0600.
    let installed = home.ok("elsewhere", &["cron", "install"]);
    let env_file = home.path().join(".local/share/executor/scheduled.env");
    assert!(installed.contains("ANTHROPIC_API_KEY") && installed.contains("IS_SANDBOX"), "{installed}");
    assert!(!installed.contains("walkthrough-key"), "a key's value is never printed: {installed}");
    let mode = std::fs::metadata(&env_file).unwrap().permissions();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);
    assert!(home.crontab().contains(&format!("'--env-file' '{}'", env_file.display())), "{}", home.crontab());
    let doctor = home.json("elsewhere", &["doctor", "--json"]);
    assert_eq!(check(&doctor, "scheduled env")["outcome"], "pass", "{doctor}");

    // A key the shell has and the file lost: doctor says scheduled runs lack it, `cron env` puts it back.
    let kept: String = std::fs::read_to_string(&env_file)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("IS_SANDBOX"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&env_file, kept).unwrap();
    let doctor = home.json("elsewhere", &["doctor", "--json"]);
    let scheduled = check(&doctor, "scheduled env");
    assert_eq!(scheduled["outcome"], "fail", "{doctor}");
    assert!(scheduled["detail"].as_str().unwrap().contains("IS_SANDBOX"), "{scheduled}");
    home.ok("elsewhere", &["cron", "env"]);
    let doctor = home.json("elsewhere", &["doctor", "--json"]);
    assert_eq!(check(&doctor, "scheduled env")["outcome"], "pass", "{doctor}");

    // The quick start's task, approved, and the runner started the way cron starts it.
    home.ok(
        "elsewhere",
        &["queue", "add", "--gid", "1207", "--repo", "app", "--description", "Add a --verbose flag"],
    );
    home.ok("elsewhere", &["approve", "1207", "--skip-triage"]);
    let ran = as_cron_runs(&home, "runner");
    let log = std::fs::read_to_string(home.path().join(".local/share/executor/logs/runner.log")).unwrap();
    assert!(ran.status.success(), "{}{}{log}", text(&ran.stdout), text(&ran.stderr));
    let runs = home.json("elsewhere", &["runs", "list", "--json"]);
    let run = &runs.as_array().unwrap()[0];
    assert_eq!(run["state"], "complete", "the agent had IS_SANDBOX from the environment file: {runs}\n{log}");
    assert!(!log.contains("walkthrough-key"), "no key in the cron log");

    // `worker run` for a task without a run works in a scratch worktree, never where the user stands.
    home.ok("elsewhere", &["queue", "add", "--gid", "42", "--repo", "app", "--description", "Try the agent"]);
    let tried = home.run("elsewhere", &["worker", "run", "--task", "42", "--kind", "queued"]);
    let said = text(&tried.stdout) + &text(&tried.stderr);
    assert!(said.contains("scratch worktree"), "{said}");
    let entries: Vec<PathBuf> =
        std::fs::read_dir(home.path().join("elsewhere")).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(entries.is_empty(), "nothing written where the user stands: {entries:?}");
}
