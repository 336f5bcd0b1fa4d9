//! The one redactor: every secret value executor knows of, in every form it takes in text (base64,
//! URL-encoded, JSON- or HTML-escaped, upper or lower case: `forms`), and every secret of a well-known
//! shape nobody named (`shapes`), replaced by `[REDACTED]` wherever text leaves executor or is stored —
//! rendered prompts (which go to a model provider), comments and notices it posts, work logs, events,
//! CI output tails, the command line's output and the dashboard's answers.
//!
//! A secret reaches that text by any route (a CI log that prints the token, a review comment, task
//! notes, an agent echoing its environment), so redaction is by value and shape, not by where text
//! came from.

mod controls;
mod forms;
mod shapes;

pub use controls::{is_bidi_control, visible};

use std::sync::{Arc, RwLock};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use crate::config::Config;

/// The shortest value treated as a secret.
const MIN_SECRET_CHARS: usize = 8;

/// What a secret is replaced by.
pub const REDACTED: &str = "[REDACTED]";

/// Replaces known secret values (in each of their forms) and secrets of well-known shapes with
/// [`REDACTED`]. Cheap to clone. Without known values it still replaces the shapes.
#[derive(Clone, Default)]
pub struct Redactor {
    known: Arc<Known>,
}

#[derive(Default)]
struct Known {
    secrets: Vec<String>,
    /// Every form of every secret, found in one pass without regard to ASCII case.
    forms: Option<AhoCorasick>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.known.secrets.len())
    }
}

impl PartialEq for Redactor {
    fn eq(&self, other: &Self) -> bool {
        self.known.secrets == other.known.secrets
    }
}

impl Eq for Redactor {}

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
        secrets.sort();
        secrets.dedup();
        let patterns: Vec<String> = secrets.iter().flat_map(|s| forms::forms_of(s)).collect();
        // Leftmost-longest: a secret that contains another is replaced whole. A failure to build (a
        // pattern set too large for memory) leaves only the shapes; it cannot happen with a config's
        // handful of values.
        let forms = (!patterns.is_empty())
            .then(|| {
                AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&patterns)
                    .ok()
            })
            .flatten();
        Redactor { known: Arc::new(Known { secrets, forms }) }
    }

    /// The secrets of `config`, read now: the values of the GitHub and GitLab token variables
    /// (`github.token_env`, `gitlab.token_env`), of `worker.pass_env`, `worker.redact_env` and both
    /// forges' `webhook_secret_env`,
    /// the notice webhook URL and the dashboard token.
    pub fn from_config(config: &Config) -> Self {
        Self::new(config_secrets(config))
    }

    /// This redactor with `more` secrets.
    pub fn with(&self, more: impl IntoIterator<Item = String>) -> Self {
        Self::new(self.known.secrets.iter().cloned().chain(more))
    }

    pub fn secrets(&self) -> &[String] {
        &self.known.secrets
    }

    /// Whether it knows no secret values (it still replaces secrets of well-known shapes).
    pub fn is_empty(&self) -> bool {
        self.known.secrets.is_empty()
    }

    pub fn redact(&self, text: &str) -> String {
        let known = match &self.known.forms {
            Some(forms) => {
                let mut out = String::with_capacity(text.len());
                forms.replace_all_with(text, &mut out, |_, _, out| {
                    out.push_str(REDACTED);
                    true
                });
                std::borrow::Cow::Owned(out)
            }
            None => std::borrow::Cow::Borrowed(text),
        };
        shapes::redact_shapes(&known).into_owned()
    }
}

impl Redactor {
    /// `value` with every string in it redacted (an agent's structured result); keys are names, kept.
    pub fn redact_json(&self, value: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match value {
            Value::String(s) => Value::String(self.redact(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.redact_json(v)).collect()),
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), self.redact_json(v))).collect())
            }
            other => other.clone(),
        }
    }
}

/// Every secret value `config` names, and every value the environment file set, from the environment
/// as it is now.
pub fn config_secrets(config: &Config) -> Vec<String> {
    let w = &config.worker;
    // An Asana, Linear or Jira source's token too: write-back errors and messages pass
    // through the redactor.
    let trackers = config.sources.iter().filter(|s| s.has_token_env()).map(|s| &s.token_env);
    let names = config.github.token_env.iter().chain(&w.pass_env).chain(&w.redact_env).chain(trackers);
    let names = names.chain(&config.gitlab.token_env);
    let names = names.chain([&config.github.webhook_secret_env, &config.gitlab.webhook_secret_env]);
    // And every value the scheduled runs' environment file set (`--env-file`).
    let from_file = crate::env_file::loaded_secret_names();
    let mut out: Vec<String> = names.chain(&from_file).filter_map(|name| std::env::var(name).ok()).collect();
    out.push(config.notify.webhook_url.clone());
    out.push(config.web.token.clone());
    out.retain(|v| !v.trim().is_empty());
    out
}

/// The variables `config` names as secrets that this process's environment lacks, as `$NAME`: the
/// `redact_env` variables, the trackers' token variables, and the GitHub token variables when a
/// GitHub forge or source is configured and none of them is set (a token `gh` or a GitHub App issues
/// is no environment value: only its shape is redacted). `pass_env` is left out: those are the
/// agents' keys, and the providers' keys have shapes of their own.
pub fn unknown_secrets(config: &Config) -> Vec<String> {
    let unset = |name: &String| std::env::var(name).map_or(true, |v| v.trim().is_empty());
    let mut out: Vec<String> =
        config.worker.redact_env.iter().filter(|n| unset(n)).map(|n| format!("${n}")).collect();
    let trackers = config.sources.iter().filter(|s| s.has_token_env());
    out.extend(trackers.map(|s| &s.token_env).filter(|n| unset(n)).map(|n| format!("${n}")));
    let uses_github = config.repos.values().any(|r| r.forge == "github")
        || config.sources.iter().any(|s| s.kind == "github_issues");
    let tokens = &config.github.token_env;
    if uses_github && config.github.app_id == 0 && !tokens.is_empty() && tokens.iter().all(unset) {
        out.push(tokens.iter().map(|n| format!("${n}")).collect::<Vec<_>>().join(" or "));
    }
    out
}

/// The secrets this process knows (the config's, once the command line has read it), for code that
/// makes names out of outside text with no redactor at hand: a branch named after a task's text.
static PROCESS: RwLock<Option<Redactor>> = RwLock::new(None);

/// Adds `redactor`'s secrets to the ones [`process`] knows. Secrets are only ever added: two configs
/// read by one process (tests) both stay covered.
pub fn remember(redactor: &Redactor) {
    let mut known = PROCESS.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    let merged = match known.as_ref() {
        Some(old) => old.with(redactor.secrets().iter().cloned()),
        None => redactor.clone(),
    };
    *known = Some(merged);
}

/// The redactor of this process's known secrets (only the shapes before [`remember`]).
pub fn process() -> Redactor {
    PROCESS.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone().unwrap_or_default()
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

    const TOKEN: &str = "ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8";

    /// Whether any 12 consecutive characters of `secret` are in `text`.
    fn leaks(secret: &str, text: &str) -> bool {
        (0..=secret.len() - 12).any(|i| text.contains(&secret[i..i + 12]))
    }

    #[test]
    fn a_known_value_is_found_in_its_other_forms() {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let value = "s3cret/value+with spaces&more";
        let r = Redactor::new([TOKEN.to_string(), value.to_string()]);
        let forms = [
            format!("AUTHORIZATION: basic {}", b64(&format!("x-access-token:{TOKEN}"))),
            format!("extra {}", b64(&format!("ab{TOKEN}"))),
            format!("extra {}", b64(&format!("a{TOKEN}z"))),
            format!("cfg {}", base64::engine::general_purpose::URL_SAFE.encode(TOKEN)),
            format!("lower {}", TOKEN.to_lowercase()),
            format!("upper {}", TOKEN.to_uppercase()),
            format!("b64 of lower {}", b64(&TOKEN.to_lowercase())),
            "url ?v=s3cret%2Fvalue%2Bwith%20spaces%26more".to_string(),
            "form v=s3cret%2fvalue%2bwith+spaces%26more".to_string(),
        ];
        for text in forms {
            let out = r.redact(&text);
            assert!(out.contains(REDACTED), "{text} -> {out}");
            assert!(!leaks(TOKEN, &out) && !leaks(&TOKEN.to_lowercase(), &out), "{out}");
            // No 12 characters of any base64 form of the token survive either.
            for offset in ["", "a", "ab", "x-access-token:"] {
                assert!(!leaks(&b64(&format!("{offset}{TOKEN}"))[4..50], &out), "{out}");
            }
        }
        assert_eq!(r.redact("s3cret%2Fvalue%2Bwith%20spaces%26more"), REDACTED);
    }

    #[test]
    fn secrets_of_well_known_shapes_are_replaced_unasked() {
        let r = Redactor::default();
        let foreign = [
            ("GH_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789 set", "GH_TOKEN=[REDACTED] set"),
            ("a gho_abcdefghijklmnopqrstuvwxyz0123456789", "a [REDACTED]"),
            (
                "ghs_abcdefghijklmnopqrstuvwxyz0123456789 ghu_abcdefghijklmnopqrstuvwxyz0123456789 ghr_abcdefghijklmnopqrstuvwxyz0123456789",
                "[REDACTED] [REDACTED] [REDACTED]",
            ),
            (&format!("pat github_pat_11ABCDEFG0{} end", "x".repeat(72)), "pat [REDACTED] end"),
            (
                "curl -H 'Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9.abc' x",
                "curl -H 'Authorization: Bearer [REDACTED]' x",
            ),
            ("Authorization: token 0123456789abcdef", "Authorization: token [REDACTED]"),
            (
                "http.extraheader=AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Zm9vYmFy",
                "http.extraheader=AUTHORIZATION: basic [REDACTED]",
            ),
            (
                "key AKIAIOSFODNN7EXAMPLE secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY.",
                "key [REDACTED] secret [REDACTED].",
            ),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [REDACTED]",
            ),
            ("slack xoxb-123456789012-1234567890123-abcdefghijklmnop ok", "slack [REDACTED] ok"),
            ("xoxp-12345678901-abcdefghij", "[REDACTED]"),
            (
                "git clone https://x-access-token:s0mething@github.com/o/r",
                "git clone https://x-access-token:[REDACTED]@github.com/o/r",
            ),
            ("key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "key [REDACTED]"),
        ];
        for (text, want) in foreign {
            assert_eq!(r.redact(text), want, "{text}");
        }
        let pem = "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8Pb\nnGy0AHB7MhgwMbRvI0MBZhpI\n-----END RSA PRIVATE KEY-----\nafter";
        assert_eq!(r.redact(pem), "before\n[REDACTED]\nafter");
        let cut = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ";
        assert_eq!(r.redact(cut), "[REDACTED]");
        // In JSON text (the command line's --json) the key's escaped newlines are redacted with it and
        // the JSON stays valid.
        let json = serde_json::json!({"log": pem, "next": "x"}).to_string();
        let clean: serde_json::Value = serde_json::from_str(&r.redact(&json)).unwrap();
        assert_eq!(clean["log"], "before\n[REDACTED]\nafter");
        // Ordinary text is left alone.
        let plain = "error: expected `;` at src/main.rs:12 (commit 0123456789abcdef0123456789abcdef01234567)";
        assert_eq!(r.redact(plain), plain);
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
