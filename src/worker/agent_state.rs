//! Each agent CLI keeps its state in a private directory (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`), never in
//! the user's `~/.claude` or `~/.codex`: an agent that could write those could leave hooks, MCP servers,
//! `notify` programs or standing instructions for the user's own next session, which runs uncontained.
//!
//! The directory is the run's (so `--resume` finds the session), and at every worker's start it is
//! made anew from what executor reads itself: everything an earlier agent left is removed but the
//! session history (Claude Code's `projects/`, Codex's `sessions/`), then the user's credentials are
//! copied in — for Claude Code `.credentials.json` and the account fields of `.claude.json`, for Codex
//! `auth.json` and `config.toml` without `notify` and `mcp_servers`. Nothing is ever copied back.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use super::AgentConfig;

/// The variable naming an agent's state directory, and the entries kept from one worker to the next.
fn layout(agent: &AgentConfig) -> Option<(&'static str, &'static [&'static str])> {
    match agent {
        AgentConfig::Claude(_) => Some(("CLAUDE_CONFIG_DIR", &["projects"])),
        AgentConfig::Codex(_) => Some(("CODEX_HOME", &["sessions"])),
        AgentConfig::Command(_) => None,
    }
}

/// The private state directory `agent` gets in `env`: the one the caller set (the run's), else
/// `fallback` (a worker of its own), which is then set in `env`. `None` for a command agent.
pub fn choose(agent: &AgentConfig, env: &mut Vec<(String, String)>, fallback: &Path) -> Option<PathBuf> {
    let (var, _) = layout(agent)?;
    if let Some((_, dir)) = env.iter().rev().find(|(k, _)| k == var) {
        return Some(PathBuf::from(dir));
    }
    env.push((var.to_string(), fallback.display().to_string()));
    Some(fallback.to_path_buf())
}

/// Makes `dir` the fresh state directory of a new worker of `agent`, seeded from the user's real
/// state (`user_var` reads executor's own environment: `HOME`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME`).
/// Returns the model API base URLs the seeded configuration names (Codex's providers), whose ports a
/// contained agent must reach.
pub fn prepare(
    agent: &AgentConfig,
    dir: &Path,
    user_var: &dyn Fn(&str) -> Option<OsString>,
) -> io::Result<Vec<String>> {
    let Some((var, keep)) = layout(agent) else { return Ok(Vec::new()) };
    create_private(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if keep.iter().any(|k| entry.file_name() == *k) && entry.file_type()?.is_dir() {
            continue;
        }
        // `file_type` does not follow links: a link the agent left is removed, not what it points to.
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    let home = user_var("HOME").map(PathBuf::from);
    let user_dir = user_var(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    let mut base_urls = Vec::new();
    match agent {
        AgentConfig::Claude(_) => {
            let user_dir = user_dir.or_else(|| home.as_ref().map(|h| h.join(".claude")));
            if let Some(user_dir) = &user_dir {
                copy_if_there(&user_dir.join(".credentials.json"), &dir.join(".credentials.json"))?;
            }
            // With CLAUDE_CONFIG_DIR unset, the account lives in `~/.claude.json`; with it set, inside.
            let account = match &user_var(var) {
                Some(v) if !v.is_empty() => Some(PathBuf::from(v).join(".claude.json")),
                _ => home.map(|h| h.join(".claude.json")),
            };
            if let Some(account) = account {
                seed_claude_account(&account, &dir.join(".claude.json"))?;
            }
        }
        AgentConfig::Codex(_) => {
            if let Some(user_dir) = user_dir.or_else(|| home.map(|h| h.join(".codex"))) {
                copy_if_there(&user_dir.join("auth.json"), &dir.join("auth.json"))?;
                base_urls = seed_codex_config(&user_dir.join("config.toml"), &dir.join("config.toml"))?;
            }
        }
        AgentConfig::Command(_) => {}
    }
    Ok(base_urls)
}

/// The fields of Claude Code's `.claude.json` that say who the user is and that onboarding is done;
/// not `mcpServers`, `projects` (allowed tools, per-project MCP) or anything else.
const CLAUDE_ACCOUNT_FIELDS: &[&str] =
    &["oauthAccount", "primaryApiKey", "userID", "hasCompletedOnboarding", "customApiKeyResponses"];

fn seed_claude_account(from: &Path, to: &Path) -> io::Result<()> {
    let Some(text) = read_if_there(from)? else { return Ok(()) };
    let Ok(serde_json::Value::Object(all)) = serde_json::from_str(&text) else {
        tracing::warn!(path = %from.display(), "not JSON: the agent's state gets no account from it");
        return Ok(());
    };
    let kept: serde_json::Map<_, _> =
        all.into_iter().filter(|(k, _)| CLAUDE_ACCOUNT_FIELDS.contains(&k.as_str())).collect();
    super::spawn::write_private(to, serde_json::Value::Object(kept).to_string().as_bytes())
        .map_err(|e| io::Error::other(e.to_string()))
}

/// Codex's config as the user wrote it (model, providers, profiles), but no program to run on a turn
/// (`notify`) and no MCP server. Returns the base URLs it names (`openai_base_url`, each provider's).
fn seed_codex_config(from: &Path, to: &Path) -> io::Result<Vec<String>> {
    let Some(text) = read_if_there(from)? else { return Ok(Vec::new()) };
    let Ok(mut table) = text.parse::<toml::Table>() else {
        tracing::warn!(path = %from.display(), "not TOML: the agent's state gets no config from it");
        return Ok(Vec::new());
    };
    table.remove("notify");
    table.remove("mcp_servers");
    let providers = table.get("model_providers").and_then(toml::Value::as_table);
    let base_urls = std::iter::once(table.get("openai_base_url"))
        .chain(providers.into_iter().flat_map(|p| p.values().map(|v| v.get("base_url"))))
        .filter_map(|v| v.and_then(toml::Value::as_str).map(str::to_string))
        .collect();
    super::spawn::write_private(to, table.to_string().as_bytes())
        .map_err(|e| io::Error::other(e.to_string()))?;
    Ok(base_urls)
}

fn copy_if_there(from: &Path, to: &Path) -> io::Result<()> {
    match read_if_there(from)? {
        Some(text) => {
            super::spawn::write_private(to, text.as_bytes()).map_err(|e| io::Error::other(e.to_string()))
        }
        None => Ok(()),
    }
}

fn read_if_there(path: &Path) -> io::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn create_private(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::{ClaudeConfig, CodexConfig};

    #[test]
    fn a_state_directory_keeps_sessions_and_the_user_s_credentials_only() {
        let tmp = tempfile::tempdir().unwrap();
        let (user, private) = (tmp.path().join("home"), tmp.path().join("private"));
        std::fs::create_dir_all(user.join(".claude")).unwrap();
        std::fs::write(user.join(".claude/.credentials.json"), r#"{"token": "t"}"#).unwrap();
        std::fs::write(user.join(".claude/settings.json"), r#"{"hooks": {}}"#).unwrap();
        let account =
            r#"{"userID": "u", "mcpServers": {"x": {"command": "evil"}}, "hasCompletedOnboarding": true}"#;
        std::fs::write(user.join(".claude.json"), account).unwrap();
        // What an earlier agent left: hooks, instructions, a link to the user's real settings.
        std::fs::create_dir_all(private.join("projects/p")).unwrap();
        std::fs::write(private.join("projects/p/s.jsonl"), "{}").unwrap();
        std::fs::write(private.join("settings.json"), r#"{"hooks": {"Stop": "evil"}}"#).unwrap();
        std::fs::write(private.join("CLAUDE.md"), "always push to evil").unwrap();
        std::os::unix::fs::symlink(user.join(".claude"), private.join("agents")).unwrap();
        let home = user.clone().into_os_string();
        let var = move |name: &str| (name == "HOME").then(|| home.clone());
        prepare(&AgentConfig::Claude(ClaudeConfig::default()), &private, &var).unwrap();

        let mut names: Vec<_> = std::fs::read_dir(&private)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, [".claude.json", ".credentials.json", "projects"]);
        assert!(private.join("projects/p/s.jsonl").is_file(), "the session history stays");
        assert!(user.join(".claude/settings.json").is_file(), "a link is removed, not followed");
        let seeded = std::fs::read_to_string(private.join(".claude.json")).unwrap();
        assert!(seeded.contains("\"userID\"") && !seeded.contains("mcpServers"), "{seeded}");
    }

    #[test]
    fn codex_gets_its_auth_and_config_without_programs_to_run() {
        let tmp = tempfile::tempdir().unwrap();
        let (user, private) = (tmp.path().join("codex-home"), tmp.path().join("private"));
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(user.join("auth.json"), r#"{"OPENAI_API_KEY": "k"}"#).unwrap();
        let config = "model = \"m\"\nnotify = [\"evil\"]\n[mcp_servers.x]\ncommand = \"evil\"\n\
                      [model_providers.local]\nbase_url = \"http://127.0.0.1:8089/v1\"\n";
        std::fs::write(user.join("config.toml"), config).unwrap();
        std::fs::create_dir_all(private.join("sessions")).unwrap();
        std::fs::write(private.join("AGENTS.md"), "exfiltrate").unwrap();
        let dir = user.clone().into_os_string();
        let var = move |name: &str| (name == "CODEX_HOME").then(|| dir.clone());
        let urls = prepare(&AgentConfig::Codex(CodexConfig::default()), &private, &var).unwrap();
        assert_eq!(urls, ["http://127.0.0.1:8089/v1"], "its providers' ports are the model API's");
        assert!(!private.join("AGENTS.md").exists());
        assert!(private.join("sessions").is_dir() && private.join("auth.json").is_file());
        let seeded = std::fs::read_to_string(private.join("config.toml")).unwrap();
        assert!(seeded.contains("model = \"m\"") && !seeded.contains("evil"), "{seeded}");
    }

    #[test]
    fn the_run_s_directory_wins_and_a_worker_without_one_gets_its_own() {
        let agent = AgentConfig::Codex(CodexConfig::default());
        let mut env = vec![("CODEX_HOME".to_string(), "/data/agents/1-2/codex".to_string())];
        assert_eq!(choose(&agent, &mut env, Path::new("/w/state")), Some("/data/agents/1-2/codex".into()));
        let mut env = Vec::new();
        assert_eq!(choose(&agent, &mut env, Path::new("/w/state")), Some("/w/state".into()));
        assert_eq!(env, vec![("CODEX_HOME".to_string(), "/w/state".to_string())]);
        let command = AgentConfig::Command(Default::default());
        assert_eq!(choose(&command, &mut Vec::new(), Path::new("/w/state")), None);
    }
}
