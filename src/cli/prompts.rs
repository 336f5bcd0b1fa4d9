//! `executor prompts export DIR` and `executor prompts check`.

use std::path::PathBuf;

use anyhow::bail;
use clap::Subcommand;

use super::output::{json, table};
use crate::config::Config;
use crate::runner::load_prompts;
use crate::worker::PromptKind;
use crate::worker::prompt::{Exported, PromptSource, export_defaults, sample_context};

#[derive(Debug, Subcommand)]
pub enum PromptsCommand {
    /// Write the default prompt templates into DIR to edit. Files you edited are kept unless --force.
    Export {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// Replace edited files with the defaults too.
        #[arg(long)]
        force: bool,
    },
    /// Load the configured prompts (worker.prompts_dir overrides included) and render each with a sample
    /// context; a template error names its file.
    Check,
}

pub fn run(config: &Config, command: PromptsCommand, as_json: bool) -> anyhow::Result<()> {
    match command {
        PromptsCommand::Export { dir, force } => export(&dir, force, as_json),
        PromptsCommand::Check => check(config, as_json),
    }
}

fn export(dir: &std::path::Path, force: bool, as_json: bool) -> anyhow::Result<()> {
    let report = export_defaults(dir, force)?;
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    if as_json {
        let files: Vec<_> =
            report.iter().map(|(path, what)| serde_json::json!({ "path": path, "action": what })).collect();
        return json(&serde_json::json!({ "dir": dir, "files": files }));
    }
    for (path, what) in &report {
        let what = match what {
            Exported::Written => "wrote",
            Exported::Overwritten => "overwrote",
            Exported::Unchanged => "kept (already the default)",
            Exported::Kept => "kept (edited; --force replaces it)",
        };
        say!("{what:<36}{}", path.display());
    }
    say!(
        "\nTo use them, name the directory in executor.toml:\n\n  [worker]\n  prompts_dir = {:?}\n\n\
         A template missing from the directory falls back to the embedded default; \
         `executor prompts check` renders them all.",
        dir.display().to_string()
    );
    Ok(())
}

fn check(config: &Config, as_json: bool) -> anyhow::Result<()> {
    let prompts = load_prompts(config)?;
    let ctx = sample_context();
    let mut rows = Vec::new();
    let mut failed = 0;
    for kind in PromptKind::ALL {
        let name = kind.template_name();
        let source = prompts
            .sources()
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| match s {
                PromptSource::Override(p) => p.display().to_string(),
                PromptSource::Embedded => "embedded default".into(),
            })
            .unwrap_or_default();
        let result = match prompts.render(kind, &ctx) {
            Ok(_) => "ok".to_string(),
            Err(e) => {
                failed += 1;
                format!("error: {e}")
            }
        };
        rows.push(vec![name, source, result]);
    }
    if as_json {
        let items: Vec<_> = rows
            .iter()
            .map(|r| serde_json::json!({ "template": r[0], "source": r[1], "result": r[2] }))
            .collect();
        json(&items)?;
    } else {
        table(&["TEMPLATE", "FROM", "RESULT"], &rows);
    }
    if failed > 0 {
        bail!("{failed} prompt template(s) failed to render");
    }
    Ok(())
}
