//! A sandbox for running the real `executor` binary in a temporary directory against its embedded SQLite
//! default, with the user's own config and data kept out. Shared by the CLI test files.
#![allow(dead_code)] // each test file uses its own part

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    /// A config whose data directory does not exist yet (nothing is created until a command runs).
    pub fn fresh() -> Sandbox {
        let sb = Sandbox { dir: tempfile::tempdir().unwrap() };
        sb.write_config("");
        sb
    }

    /// `executor init`.
    pub fn new() -> Sandbox {
        Sandbox::with_config("")
    }

    /// `executor init`, then `extra` appended to the config.
    pub fn with_config(extra: &str) -> Sandbox {
        let sb = Sandbox { dir: tempfile::tempdir().unwrap() };
        let out = sb.run(&["init", "--data-dir", "data"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let mut config = std::fs::read_to_string(sb.path().join("executor.toml")).unwrap();
        config.push_str(extra);
        std::fs::write(sb.path().join("executor.toml"), config).unwrap();
        sb
    }

    pub fn write_config(&self, extra: &str) {
        let data = self.path().join("data");
        std::fs::write(
            self.path().join("executor.toml"),
            format!("[paths]\ndata_dir = \"{}\"\n{extra}", data.display()),
        )
        .unwrap();
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_executor"));
        cmd.args(args)
            .current_dir(self.path())
            // Keep the user's own config and data out of the test.
            .env_remove("EXECUTOR_CONFIG")
            .env("HOME", self.path())
            .env("XDG_CONFIG_HOME", self.path().join("xdg-config"))
            .env("XDG_DATA_HOME", self.path().join("xdg-data"));
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).stdin(Stdio::null()).output().unwrap()
    }

    pub fn run_with_stdin(&self, args: &[&str], input: &str) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    }

    /// Runs and expects success, returning stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.push("--json");
        serde_json::from_str(&self.ok(&all)).unwrap()
    }
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A stand-in for `crontab` that keeps the table in a file, like the real one keeps it per user.
pub fn fake_crontab(dir: &Path) -> std::path::PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let table = dir.join("crontab.txt");
    let script = format!(
        "#!/bin/sh\ncase \"$1\" in\n  -l) [ -f '{t}' ] || {{ echo 'no crontab for tester' >&2; exit 1; }}; cat '{t}' ;;\n  -) cat > '{t}' ;;\n  *) exit 2 ;;\nesac\n",
        t = table.display()
    );
    let path = bin.join("crontab");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    bin
}
