//! Secrets nobody told executor about, recognised by their shape: a foreign GitHub token in a CI log,
//! an `Authorization` header an agent echoed, an AWS key pair in a config it printed.
//!
//! The rules are a small selection from gitleaks' rule list (github.com/gitleaks/gitleaks,
//! `config/gitleaks.toml`: github-pat, github-fine-grained-pat, github-oauth, github-app-token,
//! github-refresh-token, gitlab-pat, aws-access-token, slack-*-token, slack-webhook-url, private-key,
//! anthropic-api-key, openai-api-key, gcp-api-key, stripe-access-token, npm-access-token), loosened where
//! redacting too much is harmless (a GitHub token of any length after its prefix), plus the generic
//! forms a secret travels in (an `Authorization` value, a URL's password). No maintained Rust crate
//! carries such a list; `regex` is already in the tree. A rule with groups named `secret…` replaces only
//! those groups (the header name stays readable); a rule without replaces its whole match.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use super::REDACTED;

/// The AWS access key id prefixes (gitleaks' aws-access-token).
const AWS_ID: &str = r"(?-u:\b)(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?-u:\b)";

fn rules() -> Vec<String> {
    let rules = [
        // A private key block, to its END line, or to the end of the text when the END is not in it.
        // Inside JSON text its newlines are `\n` escapes: those are part of it, never a lone `\`.
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:(?:[A-Za-z0-9+/=\s:,.-]|\\[nrt])*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|(?:[A-Za-z0-9+/=\s:,.]|\\[nrt])*)",
        r"gh[pousr]_[A-Za-z0-9]{20,}",
        r"github_pat_[A-Za-z0-9_]{22,}",
        r"glpat-[A-Za-z0-9_-]{20,}",
        // An access key id with the 40-character secret that follows it (within a few lines).
        &format!(
            r"(?P<secret>{AWS_ID})[ -~\t\r\n]{{0,120}}?[^A-Za-z0-9/+](?P<secret2>[A-Za-z0-9/+]{{40}})(?:[^A-Za-z0-9/+=]|$)"
        ),
        AWS_ID,
        r#"(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?(?P<secret>[A-Za-z0-9/+]{40})"#,
        r"xox[abeoprs]-[0-9A-Za-z-]{10,}",
        r"hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/_-]{20,}",
        r#"(?i)(?-u:\b)(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|bot|digest)\s+)?(?P<secret>[A-Za-z0-9._~+/=-]{8,})"#,
        r"(?i)(?-u:\b)bearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{20,})",
        // A URL's password: `https://x-access-token:TOKEN@github.com`, `postgres://u:PASSWORD@db`.
        r#"(?i)(?-u:\b)[a-z][a-z0-9+.-]{1,20}://[^/\s:@"'\\]{1,100}:(?P<secret>[^/\s@"'\\]+)@"#,
        r"sk-ant-[A-Za-z0-9_-]{20,}",
        r"(?-u:\b)sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}",
        r"(?-u:\b)sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}",
        r"AIza[0-9A-Za-z_-]{35}",
        r"(?-u:\b)[rs]k_live_[0-9A-Za-z]{20,}",
        r"(?-u:\b)npm_[A-Za-z0-9]{36}",
    ];
    rules.iter().map(|r| r.to_string()).collect()
}

struct Rules {
    /// One pass over the text says which rules match at all; most text matches none.
    any: RegexSet,
    each: Vec<Regex>,
}

static RULES: LazyLock<Rules> = LazyLock::new(|| {
    let patterns = rules();
    // The patterns are constants tested below: a failure here is a bug in this file, not in input.
    let any = RegexSet::new(&patterns).expect("the secret shape rules compile");
    let each = patterns.iter().map(|p| Regex::new(p).expect("a secret shape rule compiles")).collect();
    Rules { any, each }
});

/// `text` with every secret of a known shape replaced.
pub(super) fn redact_shapes(text: &str) -> Cow<'_, str> {
    let hits = RULES.any.matches(text);
    if !hits.matched_any() {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_string();
    for i in hits.iter() {
        if let Cow::Owned(changed) = redact_rule(&RULES.each[i], &out) {
            out = changed;
        }
    }
    Cow::Owned(out)
}

fn redact_rule<'a>(rule: &Regex, text: &'a str) -> Cow<'a, str> {
    let secret_groups: Vec<&str> =
        rule.capture_names().flatten().filter(|name| name.starts_with("secret")).collect();
    let mut spans = Vec::new();
    for caps in rule.captures_iter(text) {
        let before = spans.len();
        spans.extend(secret_groups.iter().filter_map(|name| caps.name(name)).map(|m| m.range()));
        if spans.len() == before
            && let Some(whole) = caps.get(0)
        {
            spans.push(whole.range());
        }
    }
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    spans.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in spans {
        if span.start < at {
            continue;
        }
        out.push_str(&text[at..span.start]);
        out.push_str(REDACTED);
        at = span.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}
