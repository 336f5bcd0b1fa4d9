use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::Args;

use super::output::json;
use crate::config::{Config, TEMPLATE};
use crate::store::{Store, redact_url};

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where the database, work logs and worktrees go (default: the user's data directory).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Overwrite an existing config file.
    #[arg(long)]
    force: bool,
}

/// Writes the commented config (to --config, or ./executor.toml) and creates the database.
pub async fn run(config_flag: Option<&Path>, args: InitArgs, as_json: bool) -> anyhow::Result<()> {
    let path = config_flag.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("executor.toml"));
    let existed = path.exists();
    if existed && !args.force && args.data_dir.is_some() {
        bail!(
            "{} exists, so --data-dir would not apply; edit its [paths] data_dir, or add --force to overwrite it",
            path.display()
        );
    }
    if existed && !args.force {
        // An existing config is kept: init still makes sure the database exists and is migrated.
        say_err!("note: {} exists and is kept (use --force to overwrite it)", path.display());
    } else {
        let text = match &args.data_dir {
            Some(dir) => {
                let dir = std::path::absolute(dir).context("resolving --data-dir")?;
                let dir = dir.to_str().context("--data-dir must be valid UTF-8")?;
                let quoted = toml_string(dir);
                TEMPLATE.replacen("data_dir = \"\"", &format!("data_dir = {quoted}"), 1)
            }
            None => TEMPLATE.to_string(),
        };
        let text = format!("{text}\n{}", seed_rules_commented()); // as `init_text`, with the data dir
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let config = Config::load(&path)?;
    let data_dir = config.data_dir();
    std::fs::create_dir_all(&data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
    let url = config.database_url();
    let store = Store::open(&url).await?;
    let report = store.migrate().await?;
    store.close().await;
    let config_path = std::path::absolute(&path).unwrap_or(path);
    if as_json {
        return json(&serde_json::json!({
            "config": config_path,
            "data_dir": data_dir,
            "database": redact_url(&url),
            "schema_version": report.to,
        }));
    }
    say!("config:    {}{}", config_path.display(), if existed && !args.force { " (kept)" } else { "" });
    say!("data dir:  {}", data_dir.display());
    say!("database:  {} (schema version {})", redact_url(&url), report.to);
    say!();
    say!("Next: add a repository under [repos] in the config, check the setup with `executor doctor`, then");
    say!(
        "  executor queue add --gid 1 --description \"…\"   # queue a task (or add [[sources]]: executor intake)"
    );
    say!(
        "  executor analyzer                               # triage it with the agent (or approve --skip-triage)"
    );
    say!("  executor approve 1                              # say go");
    say!("  executor runner                                 # run the agent on what is approved");
    say!("  executor status                                 # see where things stand");
    say!("  executor serve                                  # the dashboard, on 127.0.0.1");
    say!("  executor cron install                           # keep runner and analyzer going from cron");
    say!();
    say!("{}", how_it_is_found(&config_path, config_flag.is_some()));
    Ok(())
}

/// How later commands find the config just written: what `init` says last.
fn how_it_is_found(config_path: &Path, named: bool) -> String {
    let user = crate::config::user_config_path();
    if user.as_deref() == Some(config_path) {
        return "Every executor command finds this config from any directory (it is the user's config)."
            .into();
    }
    let here = if named { "" } else { "Commands run in this directory find this config; " };
    let user = user.map(|p| format!(", or move it to {}", p.display())).unwrap_or_default();
    format!(
        "{here}from elsewhere pass --config {path} or set EXECUTOR_CONFIG={path}{user}.",
        path = config_path.display()
    )
}

/// What `init` writes without `--data-dir`: the template and, commented out, the seed's rules.
pub fn init_text() -> String {
    format!("{TEMPLATE}\n{}", seed_rules_commented())
}

/// The seed's skip rules, commented out, for the end of a new config: uncomment and adapt them.
fn seed_rules_commented() -> String {
    let mut out = String::from(
        "# ---- The seed's skip rules (executor-v2-redesign), commented out: uncomment and adapt. ----\n",
    );
    for line in crate::filter::SEED_RULES.lines() {
        out.push_str(if line.is_empty() { "#" } else { "# " });
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests;
