//! How fast the redactor goes through an agent's flood of log lines: run with
//! `cargo bench --bench redact [-- LINES]` (default 200,000). Prints figures; asserts nothing.
//!
//! Each line is redacted on its own, as the work log redacts what an agent prints. The lines are
//! generated deterministically: build output, one in a hundred with a known secret (plain, base64 or
//! URL-encoded), one in a hundred with a foreign token of a known shape, one in fifty of 4 KB.

use std::time::Instant;

use base64::Engine;
use executor::redact::Redactor;

fn main() {
    let lines: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(200_000);
    let secrets: Vec<String> =
        (0..10).map(|i| format!("sk-config-secret-{i:02}-0123456789abcdefghij")).collect();
    let redactor = Redactor::new(secrets.clone());
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{}", secrets[3]));
    let log: Vec<String> = (0..lines)
        .map(|i| match i % 100 {
            0 => format!("+ git -c http.extraheader=\"AUTHORIZATION: basic {b64}\" fetch origin"),
            1 => format!("export TOKEN={}", secrets[i % 10]),
            2 => "curl -H 'Authorization: Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789' api".into(),
            3 | 53 => format!("{} long line {i}", "compiling crate ünïcode — ".repeat(150)),
            _ => {
                format!("   Compiling crate-{i} v0.{}.{} (/home/user/src/crate-{i}) in {i}ms", i % 7, i % 13)
            }
        })
        .collect();
    let bytes: usize = log.iter().map(String::len).sum();
    let started = Instant::now();
    let mut redacted = 0usize;
    for line in &log {
        redacted += usize::from(redactor.redact(line).len() != line.len());
    }
    let took = started.elapsed().as_secs_f64();
    println!(
        "{lines} lines ({:.1} MB), 10 known secrets: {took:.3} s, {:.0} lines/s, {:.1} MB/s, {redacted} lines changed",
        bytes as f64 / 1e6,
        lines as f64 / took,
        bytes as f64 / 1e6 / took
    );
}
