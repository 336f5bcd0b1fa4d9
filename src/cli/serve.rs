//! `executor serve`: the dashboard and its JSON API, until SIGTERM or SIGINT; and the webhook receiver,
//! which starts a runner when a delivery finds none running (`runner_start`).

mod runner_start;

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;

use super::{Context, UsageError};
use crate::config::Config;
use crate::runner::shutdown_on_signals;
use crate::web::{self, AppState};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The port to listen on (default: web.port, 8370; 0 picks a free one).
    #[arg(long)]
    port: Option<u16>,
    /// The address to bind (default: web.bind, 127.0.0.1). Anything but a loopback address needs
    /// web.allow_remote = true in the config (and its name in web.allowed_hosts).
    #[arg(long, value_name = "ADDR")]
    bind: Option<String>,
    /// Do not start `executor runner` when a webhook delivery finds no runner running (by default it
    /// does, as cron would, only sooner; the instance lock keeps it to one).
    #[arg(long)]
    no_runner: bool,
    /// End every dashboard session issued so far (every browser logs in again), kept across restarts;
    /// the token stays the same.
    #[arg(long)]
    revoke_sessions: bool,
}

/// Where to listen, checked against the config before anything is opened: a non-loopback address
/// without `web.allow_remote` is a usage error (exit 2).
pub fn address(config: &Config, args: &ServeArgs) -> anyhow::Result<SocketAddr> {
    let bind = args.bind.as_deref().unwrap_or(&config.web.bind);
    // "localhost" is the one name taken: resolving others would make the check depend on DNS.
    let literal = if bind.eq_ignore_ascii_case("localhost") { "127.0.0.1" } else { bind };
    let ip: IpAddr = literal.trim_matches(|c| c == '[' || c == ']').parse().map_err(|_| {
        UsageError(format!("--bind {bind:?} is not an IP address (e.g. 127.0.0.1, ::1 or localhost)"))
    })?;
    if !ip.is_loopback() && !config.web.allow_remote {
        anyhow::bail!(UsageError(format!(
            "refusing to bind {ip}: the dashboard approves work and spends money, so it listens only on \
             loopback unless the config says `allow_remote = true` under [web] (then every request needs \
             the token)"
        )));
    }
    Ok(SocketAddr::new(ip, args.port.unwrap_or(config.web.port)))
}

/// Checks the address, opens the store, listens, prints the URL with the token once, and serves until a
/// signal.
pub async fn run(flag: Option<&Path>, args: ServeArgs, as_json: bool) -> anyhow::Result<()> {
    let config = super::context::load_config(flag)?;
    let addr = address(&config, &args)?;
    let ctx = Context::open(flag).await?;
    let token = if ctx.config.web.token.is_empty() { new_token()? } else { ctx.config.web.token.clone() };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => anyhow::anyhow!(
            "listening on {addr}: the port is in use (another `executor serve`?); choose another with --port or web.port"
        ),
        _ => anyhow::Error::new(e).context(format!("listening on {addr}")),
    })?;
    let local = listener.local_addr()?;
    let uses_github = ctx.config.repos.values().any(|r| r.forge == "github")
        || ctx.config.sources.iter().any(|s| s.kind == "github_issues");
    let github = if uses_github {
        let client = crate::github::GitHubClient::new(&ctx.config.github)
            .map_err(|e| anyhow::anyhow!("[github]: {e}"))?;
        client.share_blocks(
            ctx.store.shared_blocks(crate::shared_blocks::github_scope(&ctx.config.github.api_url)),
        );
        Some(Arc::new(client))
    } else {
        None
    };
    if !local.ip().is_loopback() && ctx.config.web.allowed_hosts.is_empty() {
        tracing::warn!(
            "dashboard bound to {local} but web.allowed_hosts is empty: only requests addressed to \
             localhost, 127.0.0.0/8 or [::1] are answered"
        );
    }
    let missing = crate::redact::unknown_secrets(&ctx.config);
    if !missing.is_empty() {
        tracing::warn!(
            "{} not set in this environment: text that quotes their values is stored and served as it is \
             (start serve with the runner's environment)",
            missing.join(", ")
        );
    }
    let url = format!("http://{local}/?token={token}");
    let state = AppState::new(ctx.store.clone(), Arc::new(ctx.config), token, github);
    let sessions = state.config.data_dir().join("dashboard-sessions.json");
    state
        .keys
        .keep_in(&sessions, args.revoke_sessions, chrono::Utc::now().timestamp())
        .with_context(|| format!("reading the ended dashboard sessions in {}", sessions.display()))?;
    // The token goes to standard output once, never to the log, and not redacted: this line is where
    // the user learns it.
    if as_json {
        let answer = serde_json::json!({ "url": url, "address": local.to_string() });
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        println!("dashboard: {url}");
    }
    tracing::info!("dashboard listening on {local}");
    // In the log, not on standard output: a reader of the URL line may close the pipe after it.
    if !state.store.users().await?.iter().any(|u| u.active()) {
        tracing::info!(
            "the printed token is the setup's own: `executor users add NAME` gives each person a login"
        );
    }
    let store = state.store.clone();
    let shutdown = shutdown_on_signals();
    // A serve without a forge's secret accepts no delivery, so it has none to start a runner for.
    if !args.no_runner && (state.webhook_secret.is_some() || state.gitlab_webhook_secret.is_some()) {
        let command = runner_start::RunnerCommand {
            exe: std::env::current_exe().context("finding the executor executable")?,
            config: flag.map(Path::to_path_buf),
            log: state.config.data_dir().join("logs").join("runner-webhook.log"),
        };
        tokio::spawn(runner_start::start_runners_when_woken(store.clone(), command, shutdown.clone()));
    }
    let served = web::serve(listener, state, shutdown).await;
    store.close().await;
    served.context("serving the dashboard")
}

/// 32 random bytes as hex: letters and digits only, so it is safe in a URL, a cookie and a header.
/// (A token set by hand is held to the same: `config::Web::token_is_safe`.)
fn new_token() -> anyhow::Result<String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| anyhow::anyhow!("no randomness for the dashboard token"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(bind: Option<&str>) -> ServeArgs {
        ServeArgs { port: Some(0), bind: bind.map(Into::into), no_runner: true, revoke_sessions: false }
    }

    #[test]
    fn only_loopback_unless_the_config_allows_more() {
        let mut config = Config::default();
        assert_eq!(address(&config, &args(None)).unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(address(&config, &args(Some("localhost"))).unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(address(&config, &args(Some("::1"))).unwrap().to_string(), "[::1]:0");
        for refused in ["0.0.0.0", "192.168.1.2", "::", "example.com"] {
            let err = address(&config, &args(Some(refused))).unwrap_err();
            assert!(err.downcast_ref::<UsageError>().is_some(), "{refused}: {err}");
        }
        config.web.allow_remote = true;
        assert_eq!(address(&config, &args(Some("0.0.0.0"))).unwrap().to_string(), "0.0.0.0:0");
        assert_eq!(config.web.port, 8370);
    }
}
