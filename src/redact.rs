//! The one redactor: every secret value executor knows of, replaced by `[REDACTED]` wherever text
//! leaves executor — rendered prompts (which go to a model provider), comments and notices it posts,
//! work logs, events.
//!
//! A secret reaches that text by any route (a CI log that prints the token, a review comment, task
//! notes, an agent echoing its environment), so redaction is by value, not by where text came from.

use crate::config::Config;

/// The shortest value treated as a secret.
const MIN_SECRET_CHARS: usize = 8;

/// What a secret is replaced by.
pub const REDACTED: &str = "[REDACTED]";

/// Replaces known secret values with [`REDACTED`]. Cheap to clone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    secrets: std::sync::Arc<Vec<String>>,
}

impl Redactor {
    /// Values shorter than 8 characters are ignored: redacting "1", "yes" or "fail" (a passed variable's
    /// value) everywhere would make the text unreadable, and an agent's answer unparsable ("verdict":
    /// "fail"), and protects nothing: no token or key is that short.
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| s.chars().count() >= MIN_SECRET_CHARS)
            .collect();
        // Longest first, so a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redactor { secrets: std::sync::Arc::new(secrets) }
    }

    /// The secrets of `config`, read now: the values of the GitHub token variables
    /// (`github.token_env`), of `worker.pass_env`, `worker.redact_env` and `github.webhook_secret_env`,
    /// the notice webhook URL and the dashboard token.
    pub fn from_config(config: &Config) -> Self {
        Self::new(config_secrets(config))
    }

    /// This redactor with `more` secrets.
    pub fn with(&self, more: impl IntoIterator<Item = String>) -> Self {
        Self::new(self.secrets.iter().cloned().chain(more))
    }

    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in self.secrets.iter() {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
        }
        out
    }
}

impl Redactor {
    /// `value` with every string in it redacted (an agent's structured result); keys are names, kept.
    pub fn redact_json(&self, value: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match value {
            _ if self.is_empty() => value.clone(),
            Value::String(s) => Value::String(self.redact(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.redact_json(v)).collect()),
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), self.redact_json(v))).collect())
            }
            other => other.clone(),
        }
    }
}

/// Every secret value `config` names, from the environment as it is now.
pub fn config_secrets(config: &Config) -> Vec<String> {
    let w = &config.worker;
    // An Asana source's token and a Linear source's key too: write-back errors and messages pass
    // through the redactor.
    let trackers =
        config.sources.iter().filter(|s| matches!(s.kind.as_str(), "asana" | "linear")).map(|s| &s.token_env);
    let names = config.github.token_env.iter().chain(&w.pass_env).chain(&w.redact_env).chain(trackers);
    let names = names.chain(std::iter::once(&config.github.webhook_secret_env));
    let mut out: Vec<String> = names.filter_map(|name| std::env::var(name).ok()).collect();
    out.push(config.notify.webhook_url.clone());
    out.push(config.web.token.clone());
    out.retain(|v| !v.trim().is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_replaces_every_occurrence_and_ignores_tiny_values() {
        let r = Redactor::new([
            "ghp_secret123".to_string(),
            "abcdefg".to_string(),
            "ghp_secret123456".to_string(),
        ]);
        assert_eq!(
            r.redact("a ghp_secret123 b ghp_secret123456 abcdefg"),
            "a [REDACTED] b [REDACTED] abcdefg"
        );
    }

    #[test]
    fn every_string_of_a_result_is_redacted() {
        let r = Redactor::new(["ghp_secret123".to_string()]);
        let result = serde_json::json!({"summary": "saw ghp_secret123", "findings": [{"body": "ghp_secret123!", "line": 3}]});
        let clean = r.redact_json(&result);
        assert_eq!(clean["summary"], "saw [REDACTED]");
        assert_eq!(clean["findings"][0]["body"], "[REDACTED]!");
        assert_eq!(clean["findings"][0]["line"], 3);
    }

    #[test]
    fn the_config_names_its_secrets() {
        let mut c = Config::default();
        c.notify.webhook_url = "https://hooks.example/T0/B0/xyzzy".into();
        c.web.token = "dashboard-token-42".into();
        c.worker.redact_env = vec!["PATH".into()];
        let r = Redactor::from_config(&c);
        let path = std::env::var("PATH").unwrap_or_default();
        let text = format!("post to https://hooks.example/T0/B0/xyzzy with dashboard-token-42 in {path}");
        assert_eq!(r.redact(&text), "post to [REDACTED] with [REDACTED] in [REDACTED]");
    }

    #[test]
    fn a_linear_sources_key_is_a_secret() {
        let c =
            Config::parse("[[sources]]\nname = \"l\"\nkind = \"linear\"\ntoken_env = \"PATH\"\n").unwrap();
        let path = std::env::var("PATH").unwrap_or_default();
        assert!(path.len() >= 8, "the test needs a PATH");
        assert_eq!(Redactor::from_config(&c).redact(&format!("key {path}")), "key [REDACTED]");
    }
}
