use std::path::Path;

use anyhow::Context as _;

use crate::config::{Config, ConfigSource, locate};
use crate::domain::{Actor, By, PERSON_NAME_RULE, valid_person_name};
use crate::store::{MigrateReport, Store, redact_url};

/// What every command needs: the config and an open, migrated store.
pub struct Context {
    pub config: Config,
    pub store: Store,
    /// What opening did to the schema (shown by `executor migrate`).
    pub migrated: MigrateReport,
    /// Who is at the keyboard (`--actor`, else the OS user), named in the audit trail.
    pub actor: Option<String>,
}

impl Context {
    pub async fn open(flag: Option<&Path>) -> anyhow::Result<Context> {
        Self::open_with(load_config(flag)?).await
    }

    /// For commands that only read: an SQLite database that does not exist yet is an error, not a new
    /// empty file (a typo in `--config` must not leave databases behind).
    pub async fn open_existing(flag: Option<&Path>) -> anyhow::Result<Context> {
        let config = load_config(flag)?;
        if let Some(path) = config.database_url().strip_prefix("sqlite://")
            && !Path::new(path).exists()
        {
            anyhow::bail!(
                "no database at {path} yet: run `executor init` (or point --config at the config you meant)"
            );
        }
        Self::open_with(config).await
    }

    async fn open_with(config: Config) -> anyhow::Result<Context> {
        let url = config.database_url();
        // Every event reason written through this store has the config's secrets replaced.
        let redactor = crate::redact::Redactor::from_config(&config);
        let store = Store::open(&url).await?.scrubbing(move |text| redactor.redact(text));
        // A newer schema is refused before anything is written; an older one is brought up to date, so
        // that cron jobs keep working across an upgrade.
        let migrated = store.migrate().await?;
        if !migrated.applied.is_empty() && migrated.from > 0 {
            say_err!(
                "note: migrated the database {} from schema {} to {}",
                redact_url(&url),
                migrated.from,
                migrated.to
            );
        }
        Ok(Context { config, store, migrated, actor: None })
    }

    /// Who made a change from the command line, for the audit trail.
    pub fn by(&self) -> By<'_> {
        match &self.actor {
            Some(name) => By::person(Actor::Cli, name),
            None => Actor::Cli.into(),
        }
    }
}

/// The person at the keyboard: `--actor NAME` (refused unless it is a plain name), else the OS user
/// when their name is one, else no one by name.
pub fn actor(flag: Option<String>) -> anyhow::Result<Option<String>> {
    if let Some(name) = flag {
        if !valid_person_name(&name) {
            anyhow::bail!(super::UsageError(format!("--actor {name:?}: a name is {PERSON_NAME_RULE}")));
        }
        return Ok(Some(name));
    }
    Ok(std::env::var("USER").ok().filter(|u| valid_person_name(u)))
}

pub fn load_config(flag: Option<&Path>) -> anyhow::Result<Config> {
    match locate(flag) {
        ConfigSource::File { path, explicit } => {
            if explicit && !path.exists() {
                anyhow::bail!(
                    "config file {} does not exist; create one with `executor init --config {}`",
                    path.display(),
                    path.display()
                );
            }
            Config::load(&path).context("loading the config")
        }
        ConfigSource::Defaults => {
            // Said on every command that runs so: a config left in another directory is otherwise
            // silently not used, against the same default database.
            let user =
                crate::config::user_config_path().map(|p| format!(", {}", p.display())).unwrap_or_default();
            say_err!(
                "note: no config file found (--config, $EXECUTOR_CONFIG, ./executor.toml{user}): \
                 using the built-in defaults; `executor init` writes one"
            );
            Ok(Config::default())
        }
    }
    .inspect(|config| {
        // What this command prints, and the names it makes from outside text, are redacted with the
        // config's secrets (`output::shown`, a branch's slug).
        crate::redact::remember(&crate::redact::Redactor::from_config(config));
    })
}
