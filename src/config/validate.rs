//! Whether a parsed config makes sense as a whole: every key's value within its range, names that refer
//! to something, and what one forge or source needs of a repository. Errors name the key and the fix.

use super::{Config, GitHubLogin, Web, allowed_port, intake, valid_project_path};

impl Config {
    pub(super) fn validate(&self) -> Result<(), String> {
        let fail = |key: &str, why: &str| Err(format!("key `{key}`: {why}"));
        if self.runner.max_workers == 0 {
            return fail("runner.max_workers", "must be at least 1");
        }
        if !matches!(self.worker.agent.as_str(), "claude" | "codex" | "command") {
            return fail("worker.agent", "must be one of: claude, codex, command");
        }
        if let Some(other) =
            self.worker.fallback.iter().find(|a| !matches!(a.as_str(), "claude" | "codex" | "command"))
        {
            return fail(
                "worker.fallback",
                &format!("{other:?} is not an agent: name claude, codex or command"),
            );
        }
        if self.worker.agents().iter().any(|a| a == "command") && self.worker.command.argv.is_empty() {
            return fail("worker.command.argv", "must name a program when the command agent is used");
        }
        let url = &self.database.url;
        let postgres = url.starts_with("postgres://") || url.starts_with("postgresql://");
        if !(url.is_empty() || postgres || url.starts_with("sqlite://")) {
            return fail(
                "database.url",
                "must be empty (SQLite in the data directory), postgres://… or sqlite://PATH",
            );
        }
        if let Some(cluster) = &self.cluster {
            if !postgres {
                return fail(
                    "cluster",
                    "needs PostgreSQL: SQLite is one host's database. Several hosts share one PostgreSQL \
                     (database.url = \"postgres://…\" in each host's config); with one host, remove [cluster] \
                     and use runner.max_workers",
                );
            }
            if cluster.max_workers == 0 {
                return fail("cluster.max_workers", "must be at least 1");
            }
        }
        if self.runner.host_name.trim() != self.runner.host_name
            || self.runner.host_name.contains(['/', ':'])
            || self.runner.host_name.chars().any(char::is_control)
        {
            return fail(
                "runner.host_name",
                "must not contain '/', ':', control characters or surrounding spaces (it is part of lease owner names)",
            );
        }
        if self.runner.lease_ttl.std() < std::time::Duration::from_secs(1) {
            return fail("runner.lease_ttl", "must be at least 1s");
        }
        for (key, value) in [
            ("budget.per_run_usd", self.budget.per_run_usd),
            ("budget.per_day_usd", self.budget.per_day_usd),
            ("budget.min_launch_usd", self.budget.min_launch_usd),
        ] {
            if !(value >= 0.0 && value.is_finite()) {
                return fail(key, "must be a non-negative number of dollars");
            }
        }
        if let Some((key, why)) = self.web.github_login.as_ref().and_then(GitHubLogin::invalid) {
            return fail(key, why);
        }
        if let Some((key, why)) = self.insights.invalid() {
            return fail(key, why);
        }
        for entry in &self.worker.network_allow {
            if let Err(why) = allowed_port(entry) {
                return fail("worker.network_allow", &why);
            }
        }
        if self.github.batch_size == 0 || self.github.batch_size > 100 {
            return fail("github.batch_size", "must be between 1 and 100 pull requests per request");
        }
        if self.github.app_id != 0
            && (self.github.private_key_path.is_empty() || self.github.installation_id == 0)
        {
            return fail(
                "github.app_id",
                "a GitHub App needs github.private_key_path and github.installation_id too",
            );
        }
        if !self.web.token.is_empty() && !Web::token_is_safe(&self.web.token) {
            return fail(
                "web.token",
                "must be at least 32 characters of letters, digits, '-', '_', '.' and '~' (or empty: a new \
                 random one at each start)",
            );
        }
        if !self.web.token.is_empty() && Web::token_bits(&self.web.token) < Web::MIN_TOKEN_BITS {
            return fail(
                "web.token",
                &format!(
                    "is not random enough ({:.0} bits by its characters' counts, at least {:.0} needed: \
                     a repeated or typed value is guessed by trying); use `openssl rand -hex 32` (or leave \
                     it empty: a new random one at each start)",
                    Web::token_bits(&self.web.token),
                    Web::MIN_TOKEN_BITS
                ),
            );
        }
        if let Some(bad) = self.web.allowed_hosts.iter().find(|h| !Web::host_is_plain(h)) {
            return fail(
                "web.allowed_hosts",
                &format!("{bad:?} is not a host name or IP address (no port, no scheme; IPv6 as [::1])"),
            );
        }
        if self.web.max_connections < 8 {
            return fail("web.max_connections", "must be at least 8 (a browser opens several at once)");
        }
        for (key, value) in [
            ("web.header_read_timeout", self.web.header_read_timeout),
            ("web.idle_timeout", self.web.idle_timeout),
        ] {
            if value.std() < std::time::Duration::from_secs(1) {
                return fail(key, "must be at least 1s");
            }
        }
        if self.analyzer.concurrency == 0 || self.analyzer.concurrency > 64 {
            return fail("analyzer.concurrency", "must be between 1 and 64 tasks at once");
        }
        if self.analyzer.max_attempts == 0 {
            return fail("analyzer.max_attempts", "must be at least 1");
        }
        intake::validate_sources(self)?;
        if let Err(e) = self.compiled_filters() {
            return Err(format!("[[filters]]: {e}"));
        }
        if self.worker.max_output_bytes == 0 {
            return fail("worker.max_output_bytes", "must be at least 1");
        }
        for (model, p) in &self.pricing.0 {
            if ![p.input, p.output, p.cache_read, p.cache_write].iter().all(|v| *v >= 0.0 && v.is_finite()) {
                return fail(
                    &format!("pricing.{model}"),
                    "prices must be non-negative dollars per million tokens",
                );
            }
        }
        for (name, repo) in &self.repos {
            if !matches!(repo.forge.as_str(), "local" | "github" | "gitlab") {
                return fail(&format!("repos.{name}.forge"), "must be \"local\", \"github\" or \"gitlab\"");
            }
            if repo.path.is_empty() {
                return fail(&format!("repos.{name}.path"), "must name the local clone");
            }
            if repo.forge == "github" && repo.github_slug().is_none() {
                return fail(
                    &format!("repos.{name}.github"),
                    "must be the repository as \"owner/name\" when forge = \"github\"",
                );
            }
            if repo.forge == "gitlab" && !valid_project_path(&repo.gitlab) {
                return fail(
                    &format!("repos.{name}.gitlab"),
                    "must be the project's full path, e.g. \"group/project\", when forge = \"gitlab\"",
                );
            }
            if repo.remote.is_empty()
                || repo.remote.starts_with('-')
                || repo.remote.contains(char::is_whitespace)
            {
                return fail(&format!("repos.{name}.remote"), "must name a git remote, e.g. \"origin\"");
            }
            let trigger = repo.ci_trigger.as_str();
            if repo.forge == "gitlab" {
                if !matches!(trigger, "" | "pipeline" | "retry") {
                    return fail(
                        &format!("repos.{name}.ci_trigger"),
                        "must be \"\" (a pipeline starts on push), \"pipeline\" (create one for the branch) \
                         or \"retry\" (retry the head pipeline's failed jobs) when forge = \"gitlab\"",
                    );
                }
                continue;
            }
            let file_ok = |f: &str| {
                !f.is_empty() && f.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            };
            let workflow_ok = trigger.strip_prefix("workflow:").is_some_and(file_ok);
            let rerun_ok = trigger == "rerun" || trigger.strip_prefix("rerun:").is_some_and(file_ok);
            if !(trigger.is_empty() || rerun_ok || workflow_ok) {
                return fail(
                    &format!("repos.{name}.ci_trigger"),
                    "must be \"\" (CI starts on push), \"workflow:FILE.yml\", \"rerun\" or \"rerun:FILE.yml\"",
                );
            }
        }
        Ok(())
    }
}
