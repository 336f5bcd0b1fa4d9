//! `executor cron …` and `executor service print …`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};

use super::context::load_config;
use crate::config::{Config, ConfigSource, locate};
use crate::env_file;
use crate::schedule::{
    Invocation, cron_block, launchd_agents, systemd_units, unit_dir, with_block, without_block,
};

#[derive(Debug, Subcommand)]
pub enum CronCommand {
    /// Add (or refresh) the */5 entries in your crontab, and write the keys scheduled runs need
    /// (agents', trackers', GitHub's) from this shell into the environment file they load
    /// (`paths.env_file`, mode 0600). Running it twice changes nothing.
    Install,
    /// Only write those keys into the environment file (for `service print`'s systemd or launchd jobs).
    Env,
    /// Remove executor's entries from your crontab, leaving the rest.
    Uninstall,
    /// Print the entries without touching the crontab.
    Print,
}

#[derive(Debug, Args)]
pub struct ServiceArgs {
    /// A macOS LaunchAgent.
    #[arg(long, conflicts_with = "systemd", required_unless_present = "systemd")]
    launchd: bool,
    /// A systemd user service and timer.
    #[arg(long)]
    systemd: bool,
}

fn invocation(flag: Option<&Path>) -> anyhow::Result<(Config, Invocation)> {
    let config = load_config(flag)?;
    let exe = std::env::current_exe().context("finding the executor binary")?;
    if let Some(why) = crate::schedule::unstable_binary(&exe) {
        say_err!("warning: {why}");
    }
    let config_path = match locate(flag) {
        ConfigSource::File { path, .. } => {
            Some(std::path::absolute(&path).context("resolving the config path")?)
        }
        ConfigSource::Defaults => None,
    };
    let env_file = std::path::absolute(config.env_file()).context("resolving paths.env_file")?;
    let inv = Invocation {
        exe,
        config: config_path,
        env_file,
        path_env: std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
        log_dir: config.logs_dir(),
    };
    Ok((config, inv))
}

/// Writes into the environment file the variables scheduled runs need that this shell has and the file
/// lacks (creating it, mode 0600), and says which by name.
fn capture_environment(config: &Config, path: &Path) -> anyhow::Result<()> {
    let existing = env_file::read(path)?.unwrap_or_default();
    let missing = env_file::missing_from(config, &existing, env_file::from_process);
    let (fits, unfit): (Vec<_>, Vec<_>) =
        missing.into_iter().partition(|(name, value)| env_file::line(name, value).is_some());
    env_file::append(path, &fits)?;
    let names =
        |vars: &[(String, String)]| vars.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ");
    if fits.is_empty() {
        say!("environment: {} (mode 0600) already has every key this shell has", path.display());
    } else {
        say!("environment: wrote {} from this shell into {} (mode 0600)", names(&fits), path.display());
    }
    if !unfit.is_empty() {
        say_err!(
            "warning: {} hold a line break or both kinds of quote and cannot be written: scheduled runs lack them",
            names(&unfit)
        );
    }
    Ok(())
}

pub fn cron(flag: Option<&Path>, command: CronCommand) -> anyhow::Result<()> {
    let (config, inv) = invocation(flag)?;
    let block = cron_block(&inv);
    match command {
        CronCommand::Print => print!("{block}"),
        CronCommand::Env => capture_environment(&config, &inv.env_file)?,
        CronCommand::Install => {
            capture_environment(&config, &inv.env_file)?;
            std::fs::create_dir_all(&inv.log_dir)
                .with_context(|| format!("creating {}", inv.log_dir.display()))?;
            let current = read_crontab()?;
            let updated = with_block(&current, &block);
            if updated == current {
                say!("crontab already up to date");
            } else {
                write_crontab(&updated)?;
                say!("installed into your crontab:\n{block}");
            }
            say!("logs: {}", inv.log_dir.display());
        }
        CronCommand::Uninstall => {
            let current = read_crontab()?;
            let updated = without_block(&current);
            if updated == current {
                say!("no executor entries in your crontab");
            } else {
                write_crontab(&updated)?;
                say!("removed executor's entries from your crontab");
            }
        }
    }
    Ok(())
}

fn read_crontab() -> anyhow::Result<String> {
    let out =
        Command::new("crontab").arg("-l").output().context("running `crontab -l` (is cron installed?)")?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("no crontab") {
        return Ok(String::new());
    }
    bail!("`crontab -l` failed: {}", err.trim())
}

fn write_crontab(text: &str) -> anyhow::Result<()> {
    let mut child =
        Command::new("crontab").arg("-").stdin(Stdio::piped()).spawn().context("running `crontab -`")?;
    child.stdin.take().context("crontab's stdin")?.write_all(text.as_bytes())?;
    let status = child.wait()?;
    if !status.success() {
        bail!("`crontab -` refused the new crontab ({status})");
    }
    Ok(())
}

pub fn service(flag: Option<&Path>, args: ServiceArgs) -> anyhow::Result<()> {
    let (_, inv) = invocation(flag)?;
    let files = if args.launchd { launchd_agents(&inv) } else { systemd_units(&inv) };
    let dir = unit_dir(args.launchd);
    for (name, text) in &files {
        say!("# {}", dir.join(name).display());
        say!("{text}");
    }
    say!("# the jobs load {}: write it first with `executor cron env`", inv.env_file.display());
    if args.launchd {
        say!("# then: launchctl load {}", dir.join(&files[0].0).display());
    } else {
        say!("# then: systemctl --user daemon-reload && systemctl --user enable --now executor-runner.timer");
    }
    Ok(())
}
