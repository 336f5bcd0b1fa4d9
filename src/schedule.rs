//! The cron watchdog (seed: "cron */5 → executor-runner"), and its launchd and systemd equivalents. Pure
//! text generation; `cli` reads and writes the crontab.

use std::path::{Path, PathBuf};

pub const BEGIN: &str =
    "# BEGIN executor (managed by `executor cron install`; remove with `executor cron uninstall`)";
pub const END: &str = "# END executor";

/// What cron needs to start executor the way the user runs it now.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub exe: PathBuf,
    pub config: Option<PathBuf>,
    /// The environment file the job loads (`paths.env_file`): the keys cron does not pass.
    pub env_file: PathBuf,
    /// The PATH to give the job, so that agents (`claude`, `codex`, `git`) are found under cron's bare PATH.
    pub path_env: String,
    pub log_dir: PathBuf,
}

/// The long-running jobs started every five minutes; each exits when idle (the seed's two daemons).
pub const JOBS: &[&str] = &["runner", "analyzer"];

/// Quotes for a POSIX shell. Only executor's own paths pass through here, never task text.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn args(inv: &Invocation, job: &str) -> Vec<String> {
    let mut v = vec![inv.exe.display().to_string()];
    if let Some(c) = &inv.config {
        v.push("--config".into());
        v.push(c.display().to_string());
    }
    v.push("--env-file".into());
    v.push(inv.env_file.display().to_string());
    v.push(job.into());
    v
}

/// The managed crontab block: one `*/5` line per job, each appending to its own log.
pub fn cron_block(inv: &Invocation) -> String {
    let mut out = vec![BEGIN.to_string()];
    for job in JOBS {
        let cmd: Vec<String> = args(inv, job).iter().map(|a| sh_quote(a)).collect();
        let log = inv.log_dir.join(format!("{job}.log"));
        out.push(format!(
            "*/5 * * * * env PATH={} {} >> {} 2>&1",
            sh_quote(&inv.path_env),
            cmd.join(" "),
            sh_quote(&log.display().to_string())
        ));
    }
    out.push(END.to_string());
    out.join("\n") + "\n"
}

/// `existing` without the managed block.
pub fn without_block(existing: &str) -> String {
    let mut out = Vec::new();
    let mut inside = false;
    for line in existing.lines() {
        if line == BEGIN {
            inside = true;
        } else if inside && line == END {
            inside = false;
        } else if !inside {
            out.push(line);
        }
    }
    let mut text = out.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    text
}

/// `existing` with the managed block replaced (or appended): installing twice changes nothing.
pub fn with_block(existing: &str, block: &str) -> String {
    without_block(existing) + block
}

/// A systemd user service and timer per job: `(file name, contents)`.
pub fn systemd_units(inv: &Invocation) -> Vec<(String, String)> {
    let mut units = Vec::new();
    for job in JOBS {
        let cmd: Vec<String> = args(inv, job).iter().map(|a| systemd_quote(a)).collect();
        units.push((
            format!("executor-{job}.service"),
            format!(
                "[Unit]\nDescription=executor {job} (runs until idle)\n\n[Service]\nType=oneshot\n\
                 Environment=PATH={}\nExecStart={}\n",
                systemd_quote(&inv.path_env),
                cmd.join(" ")
            ),
        ));
        units.push((
            format!("executor-{job}.timer"),
            format!(
                "[Unit]\nDescription=start executor {job} every 5 minutes\n\n[Timer]\nOnBootSec=1min\n\
                 OnUnitInactiveSec=5min\nPersistent=true\n\n[Install]\nWantedBy=timers.target\n"
            ),
        ));
    }
    units
}

fn systemd_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"").replace('%', "%%"))
}

/// A launchd LaunchAgent per job: `(file name, plist)`.
pub fn launchd_agents(inv: &Invocation) -> Vec<(String, String)> {
    JOBS.iter()
        .map(|job| {
            let program: String = args(inv, job)
                .iter()
                .map(|a| format!("    <string>{}</string>\n", xml_escape(a)))
                .collect();
            let log = xml_escape(&inv.log_dir.join(format!("{job}.log")).display().to_string());
            (
                format!("dev.executor.{job}.plist"),
                format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                     <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
                     <plist version=\"1.0\">\n<dict>\n  <key>Label</key>\n  <string>dev.executor.{job}</string>\n\
                     \x20 <key>ProgramArguments</key>\n  <array>\n{program}  </array>\n\
                     \x20 <key>EnvironmentVariables</key>\n  <dict>\n    <key>PATH</key>\n    <string>{}</string>\n  </dict>\n\
                     \x20 <key>StartInterval</key>\n  <integer>300</integer>\n\
                     \x20 <key>StandardOutPath</key>\n  <string>{log}</string>\n\
                     \x20 <key>StandardErrorPath</key>\n  <string>{log}</string>\n</dict>\n</plist>\n",
                    xml_escape(&inv.path_env)
                ),
            )
        })
        .collect()
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Where `service print` suggests the files go.
pub fn unit_dir(launchd: bool) -> PathBuf {
    let home = dirs::home_dir().unwrap_or_else(|| Path::new("~").to_path_buf());
    if launchd { home.join("Library/LaunchAgents") } else { home.join(".config/systemd/user") }
}

/// Why a binary should not be scheduled: one inside a cargo `target/` directory is replaced by the next
/// `cargo build` and removed by `cargo clean`, and then cron fails every five minutes, quietly.
pub fn unstable_binary(exe: &Path) -> Option<String> {
    // A directory named `target`, or any cargo build directory (`CARGO_TARGET_DIR` elsewhere): cargo
    // marks its root with a CACHEDIR.TAG.
    let in_target = exe.components().any(|c| c.as_os_str() == "target")
        || exe
            .ancestors()
            .skip(1)
            .any(|dir| dir.join("CACHEDIR.TAG").is_file() && dir.join("debug").is_dir());
    in_target.then(|| {
        format!(
            "{} is inside a cargo target/ directory: the next `cargo build` replaces it and `cargo clean` \
             removes it, and every scheduled run fails from then on. Install executor first \
             (`cargo install --locked --path .` in its clone puts it in ~/.cargo/bin), then schedule the \
             installed binary: `executor cron install`.",
            exe.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_in_a_cargo_target_directory_is_called_unstable() {
        let why = unstable_binary(Path::new("/home/a/executor/target/debug/executor")).unwrap();
        assert!(why.contains("cargo install --locked --path ."), "{why}");
        assert_eq!(unstable_binary(Path::new("/home/a/.cargo/bin/executor")), None);
        assert_eq!(
            unstable_binary(Path::new("/opt/targets/executor")),
            None,
            "only a component named target"
        );
    }

    fn inv() -> Invocation {
        Invocation {
            exe: "/opt/bin/executor".into(),
            config: Some("/home/a/it's/executor.toml".into()),
            env_file: "/data/scheduled.env".into(),
            path_env: "/usr/bin:/bin".into(),
            log_dir: "/data/logs".into(),
        }
    }

    #[test]
    fn the_cron_line_quotes_every_path_and_logs() {
        let block = cron_block(&inv());
        let line = block.lines().nth(1).unwrap();
        assert_eq!(
            line,
            "*/5 * * * * env PATH='/usr/bin:/bin' '/opt/bin/executor' '--config' '/home/a/it'\\''s/executor.toml' '--env-file' '/data/scheduled.env' 'runner' >> '/data/logs/runner.log' 2>&1"
        );
    }

    #[test]
    fn the_analyzer_has_its_own_line_and_log() {
        let block = cron_block(&inv());
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(lines.len(), 4, "begin, runner, analyzer, end: {block}");
        assert!(lines[2].ends_with("'analyzer' >> '/data/logs/analyzer.log' 2>&1"), "{}", lines[2]);
        assert_eq!(systemd_units(&inv()).len(), 4, "a service and a timer per job");
        assert_eq!(launchd_agents(&inv())[1].0, "dev.executor.analyzer.plist");
    }

    #[test]
    fn installing_is_idempotent_and_keeps_other_entries() {
        let mine = "MAILTO=me\n0 3 * * * backup\n";
        let once = with_block(mine, &cron_block(&inv()));
        let twice = with_block(&once, &cron_block(&inv()));
        assert_eq!(once, twice);
        assert!(once.starts_with(mine));
        assert_eq!(without_block(&twice), mine);
        assert_eq!(without_block(""), "");
    }

    #[test]
    fn units_and_agents_name_the_job() {
        let units = systemd_units(&inv());
        assert_eq!(units[0].0, "executor-runner.service");
        assert!(units[0].1.contains("ExecStart=\"/opt/bin/executor\" \"--config\""));
        assert!(units[1].1.contains("OnUnitInactiveSec=5min"));
        let agents = launchd_agents(&inv());
        assert!(agents[0].1.contains("<string>runner</string>"));
        assert!(agents[0].1.contains("<integer>300</integer>"));
    }
}
