//! `[web]`: the dashboard's address, its token and its connection limits.

use serde::Deserialize;

use super::{Duration, GitHubLogin};

/// `[web]`: where `executor serve` listens, the token that guards it, and how many connections it holds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Web {
    /// The address to bind; anything but a loopback address needs `allow_remote = true`.
    pub bind: String,
    pub port: u16,
    /// The dashboard token. Empty: a new random one at each start, printed once in the URL. Set by
    /// hand, at least [`Web::MIN_TOKEN_LEN`] characters of letters, digits, `-`, `_`, `.` and `~`.
    pub token: String,
    /// Allow binding beyond loopback; every request (reads too) then needs the token.
    pub allow_remote: bool,
    /// Host names (besides localhost, 127.0.0.0/8 and [::1]) a request's `Host` may name. Any other
    /// is refused: a page on another site that rebinds its name to this address gets nothing.
    pub allowed_hosts: Vec<String>,
    /// Connections held at once; past it, the one waiting longest for a request is closed.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers.
    pub header_read_timeout: Duration,
    /// How long a connection may stay open with no request in progress.
    pub idle_timeout: Duration,
    /// "Sign in with GitHub", when configured.
    pub github_login: Option<GitHubLogin>,
}

impl Web {
    /// The shortest token accepted from the config: 32 characters of the safe alphabet.
    pub const MIN_TOKEN_LEN: usize = 32;

    /// The least a hand-set token must carry by [`Web::token_bits`]: 32 random hex digits carry about
    /// 110 by that measure; `aaaa…` none, `abab…` 32.
    pub const MIN_TOKEN_BITS: f64 = 96.0;

    /// An estimate of the randomness in `token`: its length times the Shannon entropy of its
    /// characters' frequencies. It cannot see patterns (`abcdefgh…` passes), only repeats and small
    /// alphabets, which is what a token typed by hand shows most.
    pub fn token_bits(token: &str) -> f64 {
        let mut counts = std::collections::HashMap::new();
        for c in token.chars() {
            *counts.entry(c).or_insert(0usize) += 1;
        }
        let len = token.chars().count() as f64;
        let per_char: f64 = counts
            .values()
            .map(|&n| {
                let p = n as f64 / len;
                -p * p.log2()
            })
            .sum();
        per_char * len
    }

    /// Whether `token` is long enough and safe in a URL, a cookie and a header as it is.
    pub fn token_is_safe(token: &str) -> bool {
        token.len() >= Self::MIN_TOKEN_LEN
            && token.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~'))
    }

    /// Whether `name` may be listed in `allowed_hosts`: a DNS name or an IP address, without a port.
    pub(super) fn host_is_plain(name: &str) -> bool {
        let bracketed = name.strip_prefix('[').and_then(|n| n.strip_suffix(']'));
        match bracketed {
            Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
            None => {
                !name.is_empty()
                    && name.len() <= 253
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'))
            }
        }
    }
}

impl Default for Web {
    fn default() -> Self {
        Web {
            bind: "127.0.0.1".into(),
            port: 8370,
            token: String::new(),
            allow_remote: false,
            allowed_hosts: Vec::new(),
            max_connections: 256,
            header_read_timeout: Duration::secs(10),
            idle_timeout: Duration::secs(60),
            github_login: None,
        }
    }
}
