//! The forge a configured repository uses, made the same way for the runner and the dashboard.

use std::sync::Arc;

use super::{Forge, LocalForge, github::GitHubForge};
use crate::config::{Config, Repo};
use crate::github::GitHubClient;
use crate::shared_blocks::{github_scope, gitlab_scope};
use crate::store::Store;

impl Forge {
    /// The forge of repository `name`. A GitHub forge uses `client` when one was made (every forge on
    /// the token shares one rate limit), else makes it and leaves it there for the next. The error
    /// names the config key at fault.
    pub fn for_repo(
        config: &Config,
        store: &Store,
        name: &str,
        repo: &Repo,
        client: &mut Option<Arc<GitHubClient>>,
    ) -> Result<Forge, String> {
        match repo.forge.as_str() {
            "local" => Ok(Forge::Local(LocalForge {
                store: store.clone(),
                repo_name: name.to_string(),
                repo: repo.clone(),
                ci_root: config.data_dir().join("ci"),
                host: config.host_name(),
                ci_sandbox: crate::worker::sandbox::for_config(config, []),
            })),
            "github" => {
                let client = shared_client(config, store, client)?;
                let forge = GitHubForge::new(client, store.clone(), name, repo, &config.github)
                    .map_err(|e| e.to_string())?;
                Ok(Forge::GitHub(forge.with_worktrees_root(config.worktrees_root())))
            }
            "gitlab" => {
                // One client per repository, learning GitLab's limits from its own answers; the blocks
                // are shared by every client and process on the instance (the limits are per user).
                let client = crate::gitlab::GitLabClient::from_env(&config.gitlab)
                    .map_err(|e| format!("[gitlab]: {e}"))?;
                client.share_blocks(store.shared_blocks(gitlab_scope(&config.gitlab.url)));
                let forge = super::gitlab::GitLabForge::new(
                    Arc::new(client),
                    store.clone(),
                    name,
                    repo,
                    &config.gitlab,
                )
                .map_err(|e| e.to_string())?;
                Ok(Forge::GitLab(forge.with_worktrees_root(config.worktrees_root())))
            }
            other => Err(format!(
                "repos.{name}.forge = {other:?} is not a forge executor knows; use \"local\", \"github\" or \"gitlab\""
            )),
        }
    }
}

/// The GitHub client of `[github]`, made once: every process on the token honours the blocks GitHub
/// gave any of them.
pub fn shared_client(
    config: &Config,
    store: &Store,
    client: &mut Option<Arc<GitHubClient>>,
) -> Result<Arc<GitHubClient>, String> {
    if let Some(c) = client {
        return Ok(c.clone());
    }
    let c = Arc::new(GitHubClient::new(&config.github).map_err(|e| format!("[github]: {e}"))?);
    c.share_blocks(store.shared_blocks(github_scope(&config.github.api_url)));
    *client = Some(c.clone());
    Ok(c)
}
