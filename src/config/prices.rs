//! The published prices of the models the agent CLIs use, built in so that a worker's cost is right
//! without a `[pricing]` table: a Claude Code worker executor had to stop (it reports its cost only at
//! the end) or any Codex worker (it never does) is priced from its tokens at its own model's rate,
//! not at `default`'s.
//!
//! Dollars per million tokens, standard tier (no batch, fast-mode or long-context surcharge), from
//! Anthropic's pricing page (platform.claude.com/docs/en/about-claude/pricing) and OpenAI's
//! (developers.openai.com/api/docs/pricing), read 2026-12-04. A key is a prefix of the model's name as
//! the CLI reports it (`claude-opus-4-5-20251101`, `gpt-6.1-sol`); the longest wins, and a user's own
//! `[pricing."PREFIX"]` wins over these. Cache writes are the 5-minute rate.

use super::Price;

const fn price(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Price {
    Price { input, output, cache_read, cache_write }
}

pub(super) const BUILT_IN: &[(&str, Price)] = &[
    // Anthropic.
    ("claude-fable-5-1", price(10.0, 50.0, 0.25, 12.5)),
    ("claude-mythos-5-1", price(10.0, 50.0, 0.25, 12.5)),
    ("claude-fable-5", price(10.0, 50.0, 1.0, 12.5)),
    ("claude-mythos-5", price(10.0, 50.0, 1.0, 12.5)),
    ("claude-opus-5-5", price(4.0, 20.0, 0.2, 5.0)),
    ("claude-opus-5", price(5.0, 25.0, 0.5, 6.25)),
    ("claude-opus-4-8", price(5.0, 25.0, 0.5, 6.25)),
    ("claude-opus-4-7", price(5.0, 25.0, 0.5, 6.25)),
    ("claude-opus-4-6", price(5.0, 25.0, 0.5, 6.25)),
    ("claude-opus-4-5", price(5.0, 25.0, 0.5, 6.25)),
    // Opus 4 and 4.1 (`claude-opus-4-1-…`, `claude-opus-4-20250514`) kept the old tier.
    ("claude-opus-4", price(15.0, 75.0, 1.5, 18.75)),
    ("claude-sonnet-5-5", price(2.0, 10.0, 0.1, 2.5)),
    ("claude-sonnet-5", price(2.0, 10.0, 0.2, 2.5)),
    ("claude-sonnet-4", price(3.0, 15.0, 0.3, 3.75)),
    // Haiku 5.5's rate for prompts up to 100k tokens (an agent's are mostly shorter).
    ("claude-haiku-5-5", price(0.1, 0.5, 0.01, 0.125)),
    ("claude-haiku-4-5", price(1.0, 5.0, 0.1, 1.25)),
    ("claude-3-5-haiku", price(0.8, 4.0, 0.08, 1.0)),
    // OpenAI (cache writes are not billed separately by Codex's usage: 0).
    ("gpt-6-astra", price(10.0, 50.0, 1.0, 0.0)),
    ("gpt-6.1-sol", price(2.0, 10.0, 0.1, 0.0)),
    ("gpt-6-sol", price(2.0, 10.0, 0.2, 0.0)),
    ("gpt-6-luna", price(0.1, 0.5, 0.01, 0.0)),
    ("gpt-5.6-sol", price(4.0, 20.0, 0.4, 0.0)),
    ("gpt-5.6-terra", price(2.0, 12.0, 0.2, 0.0)),
    ("gpt-5.6-luna", price(0.2, 1.2, 0.02, 0.0)),
    ("gpt-5.5", price(5.0, 30.0, 0.5, 0.0)),
    ("gpt-5.4", price(2.5, 15.0, 0.25, 0.0)),
];

/// The built-in price of `model`: the longest key it starts with.
pub(super) fn built_in(model: &str) -> Option<Price> {
    BUILT_IN.iter().filter(|(k, _)| model.starts_with(k)).max_by_key(|(k, _)| k.len()).map(|(_, p)| *p)
}
