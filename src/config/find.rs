//! Which config file applies: `--config`, then `$EXECUTOR_CONFIG`, then `./executor.toml`, then the
//! user's config directory. With none, the defaults apply.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// A file to read (it must exist when given explicitly).
    File { path: PathBuf, explicit: bool },
    /// No file anywhere: defaults.
    Defaults,
}

pub const ENV_VAR: &str = "EXECUTOR_CONFIG";

pub fn locate(flag: Option<&Path>) -> ConfigSource {
    if let Some(p) = flag {
        return ConfigSource::File { path: p.to_path_buf(), explicit: true };
    }
    if let Some(p) = std::env::var_os(ENV_VAR).filter(|v| !v.is_empty()) {
        return ConfigSource::File { path: PathBuf::from(p), explicit: true };
    }
    let local = PathBuf::from("executor.toml");
    if local.is_file() {
        return ConfigSource::File { path: local, explicit: false };
    }
    if let Some(user) = user_config_path().filter(|p| p.is_file()) {
        return ConfigSource::File { path: user, explicit: false };
    }
    ConfigSource::Defaults
}

/// `~/.config/executor/executor.toml` (or the platform's equivalent).
pub fn user_config_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("executor").join("executor.toml"))
}
