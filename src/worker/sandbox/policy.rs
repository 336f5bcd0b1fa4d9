//! What the configuration makes of a sandbox: the paths no contained process reads (executor's own
//! and the user's credentials) and the ports it may connect to. The same for workers, triage, a worker
//! run by hand and local CI.

use std::path::PathBuf;

use super::Sandbox;
use crate::config::{Config, NetworkMode, expand_home};

/// A sandbox for `config.worker.sandbox` (`None`: contained by nothing) in which `writable` (and
/// `worker.sandbox_writable`) may be written, executor's own paths and `worker.sandbox_hidden` are
/// hidden, and — with `worker.network = "allowlist"` — only `worker.network_allow`'s ports are open
/// (an agent also gets its model API's: [`model_ports`]).
pub fn for_config(config: &Config, writable: impl IntoIterator<Item = PathBuf>) -> Option<Sandbox> {
    let extra = super::configured(&config.worker.sandbox_writable);
    let mut sandbox = Sandbox::for_mode(config.worker.sandbox, writable.into_iter().chain(extra))?;
    for path in hidden(config) {
        sandbox.hide(path);
    }
    if config.worker.network == NetworkMode::Allowlist {
        // Validated when the config loaded: every entry has a port.
        let ports = config.worker.network_allow.iter().filter_map(|e| crate::config::allowed_port(e).ok());
        sandbox.connect_only(ports);
    }
    Some(sandbox)
}

/// What no contained process may read: executor's config file, data directory (database, work logs,
/// other workers' files), database file, the scheduled runs' environment file, worktrees (other runs'), the agent CLIs' real state (each
/// agent gets a private one) and `worker.sandbox_hidden`.
fn hidden(config: &Config) -> Vec<PathBuf> {
    let mut out = vec![config.data_dir(), config.worktrees_root(), config.logs_dir(), config.env_file()];
    out.extend(config.source.clone());
    if let Some(db) = config.database_url().strip_prefix("sqlite://") {
        let db = db.split('?').next().unwrap_or(db);
        out.extend(["", "-wal", "-shm", "-journal"].iter().map(|s| PathBuf::from(format!("{db}{s}"))));
    }
    out.extend(["~/.claude", "~/.claude.json", "~/.codex"].iter().map(|p| expand_home(p)));
    for var in ["CLAUDE_CONFIG_DIR", "CODEX_HOME", "EXECUTOR_CONFIG"] {
        out.extend(std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from));
    }
    out.extend(config.worker.sandbox_hidden.iter().filter(|s| !s.trim().is_empty()).map(|s| expand_home(s)));
    out
}

/// Which layer contains what, for the configured agent (`executor doctor`): executor's Landlock, and
/// the CLI's own sandbox beneath or instead of it.
pub fn layers(config: &Config) -> String {
    let contained = super::enabled(config.worker.sandbox).unwrap_or(false);
    let network = match (contained, config.worker.network) {
        (false, _) => "the network is open".to_string(),
        (true, NetworkMode::Open) => "connections open (worker.network = \"open\")".to_string(),
        (true, NetworkMode::Allowlist) => {
            let allowed: Vec<String> = config
                .worker
                .network_allow
                .iter()
                .filter_map(|e| crate::config::allowed_port(e).ok())
                .map(|p| p.to_string())
                .collect();
            match allowed.as_slice() {
                [] => "connections to the model API's port only (443, or its base URL's)".to_string(),
                ports => format!("connections to the model API's port and to {}", ports.join(", ")),
            }
        }
    };
    let own = match (config.worker.agent.as_str(), contained) {
        ("codex", true) => {
            "Codex's own sandbox is off (--sandbox danger-full-access: its bubblewrap cannot run \
                           inside Landlock); executor's holds files, reads, network and signals"
                .to_string()
        }
        ("codex", false) => format!(
            "only Codex's own sandbox (--sandbox {}) contains it; triage: {}",
            config.worker.codex.sandbox, config.analyzer.codex_sandbox
        ),
        ("claude", true) => format!(
            "executor's Landlock holds files, reads, network and signals; Claude Code's permission mode {:?} \
             only decides which tools it asks to use",
            config.worker.claude.permission_mode
        ),
        ("claude", false) => format!(
            "only Claude Code's permission mode ({:?}) stands between it and your account",
            config.worker.claude.permission_mode
        ),
        (_, true) => "executor's Landlock holds files, reads, network and signals".to_string(),
        (_, false) => "nothing contains a command agent".to_string(),
    };
    format!("{} agent: {own}; {network}; local CI is contained like an agent", config.worker.agent)
}

/// The variables naming where an agent's requests to its model go: the APIs' base URLs, and a proxy the
/// CLIs send them through.
const MODEL_URL_VARS: &[&str] = &[
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// The TCP ports of the model APIs an agent in `env` talks to: those of `ANTHROPIC_BASE_URL`,
/// `OPENAI_BASE_URL` and a proxy when set; 443 (Anthropic's and OpenAI's own) unless a base URL is set.
pub fn model_ports(env: &[(String, String)]) -> Vec<u16> {
    let set = |name: &str| env.iter().rev().find(|(k, v)| k == name && !v.trim().is_empty()).map(|(_, v)| v);
    let mut ports: Vec<u16> =
        MODEL_URL_VARS.iter().filter_map(|name| set(name)).filter_map(|url| url_port(url)).collect();
    if set("ANTHROPIC_BASE_URL").is_none() && set("OPENAI_BASE_URL").is_none() {
        ports.push(443);
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// The port a URL connects to: its own, or its scheme's (https 443, http 80).
pub fn url_port(url: &str) -> Option<u16> {
    let (scheme, rest) = url.trim().split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    // `[::1]:8080` or `host:8080`; a bare IPv6 literal in brackets has no port.
    let port = match host_port.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && !port.contains(']') => Some(port),
        _ => None,
    };
    match (port, scheme.to_ascii_lowercase().as_str()) {
        (Some(p), _) => p.parse().ok(),
        (None, "https") => Some(443),
        (None, "http") => Some(80),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn model_ports_come_from_the_base_urls_or_default_to_https() {
        assert_eq!(model_ports(&[]), vec![443]);
        assert_eq!(model_ports(&env(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:41234")])), vec![41234]);
        assert_eq!(model_ports(&env(&[("OPENAI_BASE_URL", "https://proxy.example/v1")])), vec![443]);
        assert_eq!(model_ports(&env(&[("OPENAI_BASE_URL", "http://[::1]:9000/v1")])), vec![9000]);
        assert_eq!(model_ports(&env(&[("OPENAI_BASE_URL", "http://[::1]/v1")])), vec![80]);
        assert_eq!(model_ports(&env(&[("ANTHROPIC_BASE_URL", "not a url")])), Vec::<u16>::new());
        let proxied = env(&[("HTTPS_PROXY", "http://proxy.corp:3128")]);
        assert_eq!(model_ports(&proxied), vec![443, 3128], "the APIs through a proxy");
    }

    #[test]
    fn executor_s_own_paths_and_credentials_are_hidden() {
        let mut config = Config::default();
        config.paths.data_dir = "/srv/executor-data".into();
        config.source = Some(PathBuf::from("/etc/executor.toml"));
        config.paths.env_file = "/etc/executor/cron.env".into();
        config.worker.sandbox = crate::config::SandboxMode::Off;
        assert!(for_config(&config, []).is_none(), "off contains nothing");
        let hidden = hidden(&config);
        let own = [
            "/srv/executor-data",
            "/srv/executor-data/executor.db",
            "/etc/executor.toml",
            "/etc/executor/cron.env",
        ];
        for path in own {
            assert!(hidden.contains(&PathBuf::from(path)), "{path}: {hidden:?}");
        }
        assert!(hidden.contains(&expand_home("~/.ssh")) && hidden.contains(&expand_home("~/.codex")));
    }
}
