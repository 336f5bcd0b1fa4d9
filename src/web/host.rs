//! The `Host` allowlist: a request must be addressed to a loopback name (`localhost`, 127.0.0.0/8,
//! `[::1]`) or to a name listed in `web.allowed_hosts`. A page on another site that rebinds its own
//! name to this address (DNS rebinding) sends that name as `Host`, and is refused before anything else.

use std::net::{Ipv4Addr, Ipv6Addr};

/// The host part of a `Host` value (`name`, `name:port`, `[v6]`, `[v6]:port`), lowercased; `None` when
/// it is not of that form.
pub fn host_name(value: &str) -> Option<String> {
    let value = value.trim();
    let host = if value.starts_with('[') {
        let end = value.find(']')?;
        let rest = &value[end + 1..];
        if !(rest.is_empty() || rest.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        &value[..=end]
    } else {
        match value.rsplit_once(':') {
            Some((host, port)) if is_port(port) => host,
            Some(_) => return None,
            None => value,
        }
    };
    // A trailing dot names the same host ("localhost." is localhost).
    let host = host.strip_suffix('.').unwrap_or(host);
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

fn is_port(s: &str) -> bool {
    !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit())
}

/// Whether a request addressed to `value` (its `Host`) is served.
pub fn allowed(value: &str, listed: &[String]) -> bool {
    let Some(host) = host_name(value) else { return false };
    if host == "localhost" {
        return true;
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        if ip.is_loopback() {
            return true;
        }
    } else if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'))
        && v6.parse::<Ipv6Addr>().is_ok_and(|ip| ip.is_loopback())
    {
        return true;
    }
    listed.iter().any(|name| {
        let name = name.strip_suffix('.').unwrap_or(name);
        name.eq_ignore_ascii_case(&host)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_listed_hosts_only() {
        let none: Vec<String> = Vec::new();
        for ok in [
            "localhost",
            "LOCALHOST:8370",
            "localhost.:1",
            "127.0.0.1:8370",
            "127.9.8.7",
            "[::1]:8370",
            "[::1]",
        ] {
            assert!(allowed(ok, &none), "{ok}");
        }
        for bad in [
            "evil.example:8370",
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "0.0.0.0:8370",
            "192.168.1.2",
            "[::2]:1",
            "[::1]x",
            "localhost:http",
            "",
            "[::ffff:127.0.0.1]",
        ] {
            assert!(!allowed(bad, &none), "{bad}");
        }
        let listed = vec!["box.lan".to_string(), "[fe80::1]".to_string()];
        assert!(allowed("BOX.lan:8370", &listed) && allowed("[fe80::1]:80", &listed));
        assert!(!allowed("other.lan", &listed));
    }
}
