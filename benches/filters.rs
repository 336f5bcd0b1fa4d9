//! How long the seed's skip filters take over many tasks: run with
//! `cargo bench --bench filters [-- TASKS]` (default 100,000). Prints figures; asserts nothing.
//!
//! The tasks are generated deterministically: mixed sources (qualifying, not, user_feedback_raw),
//! descriptions from a line to 2 KB with one in fifty of 10 KB, and the seed's skip triggers
//! (no macOS, project templates, Figma links, completed, someone else's) sprinkled in. Two passes:
//! the seed's config as is (the gate skips the other sources first), and without the gate, so every
//! task meets every filter.

use std::collections::BTreeMap;
use std::time::Instant;

use chrono::{DateTime, TimeZone, Utc};
use executor::filter::{Filters, RulesConfig, SEED_RULES, TaskFields};

const TARGET_SECONDS: f64 = 1.0;

/// A small deterministic generator (xorshift), so every run measures the same tasks.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

struct Task {
    description: String,
    notes: String,
    source: &'static str,
    completed: Option<bool>,
    assignee: Option<&'static str>,
    modified_at: DateTime<Utc>,
}

const SOURCES: &[&str] = &[
    "O-L Backlog (Desktop Browsers)",
    "user_reports",
    "watched",
    "hack_days",
    "my_tasks_inbox",
    "my_tasks_backlog",
    "user_feedback_raw",
    "mobile_backlog",
];
const WORDS: &[&str] = &[
    "the", "sidebar", "flickers", "when", "a", "tab", "is", "dragged", "crash", "window", "Timeline",
    "profile", "sync", "settings", "toolbar", "download", "Windows", "Linux", "bookmark", "history",
    "render", "GPU", "🙂",
];

fn generate(count: usize) -> Vec<Task> {
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    let base = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().unwrap_or_default();
    (0..count)
        .map(|i| {
            let size = if i % 50 == 0 { 10_000 } else { 40 + dice.below(2_000) as usize };
            let mut description = String::with_capacity(size + 64);
            if dice.below(10) < 7 {
                description.push_str(dice.pick(&["macOS: ", "[macOS] ", "MacOS ", ""]));
            }
            while description.len() < size {
                description.push_str(dice.pick(WORDS));
                description.push(if dice.below(12) == 0 { '\n' } else { ' ' });
            }
            match dice.below(20) {
                0 => description.push_str("\nProject Advisor: Kim"),
                1 => description.push_str("\nDesign: https://www.figma.com/design/AbC123/Sidebar?node-id=1"),
                2 => description.push_str("\nmore on macOS 15"),
                _ => {}
            }
            Task {
                description,
                notes: if dice.below(4) == 0 {
                    "a human note about macOS".to_string()
                } else {
                    String::new()
                },
                source: dice.pick(SOURCES),
                completed: Some(dice.below(10) == 0),
                assignee: [None, None, Some("alex"), Some("Alex"), Some("sam")][dice.below(5) as usize],
                modified_at: base + chrono::Duration::minutes(dice.below(500_000) as i64),
            }
        })
        .collect()
}

fn pass(label: &str, filters: &Filters, tasks: &[Task], now: DateTime<Utc>) {
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let started = Instant::now();
    for task in tasks {
        let fields = TaskFields {
            description: &task.description,
            notes: &task.notes,
            source: task.source,
            completed: task.completed,
            assignee: task.assignee,
            modified_at: Some(task.modified_at),
            raw: None,
        };
        if let Some(skip) = filters.skip_reason(&fields, now) {
            *skipped.entry(skip.rule).or_default() += 1;
        }
    }
    let elapsed = started.elapsed();
    let per_task = elapsed.as_secs_f64() / tasks.len().max(1) as f64;
    println!(
        "{label}: {} tasks in {:.3} s ({:.2} µs per task; target under {TARGET_SECONDS} s: {})",
        tasks.len(),
        elapsed.as_secs_f64(),
        per_task * 1e6,
        if elapsed.as_secs_f64() < TARGET_SECONDS { "met" } else { "MISSED" },
    );
    let total: usize = skipped.values().sum();
    for (rule, count) in &skipped {
        println!("    {rule:<24} {count:>7}");
    }
    println!("    {:<24} {:>7}", "(passed)", tasks.len() - total);
}

fn main() {
    let count = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100_000);
    let config: RulesConfig = toml::from_str(SEED_RULES).expect("SEED_RULES parses");
    let now = Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).single().unwrap_or_default();

    let started = Instant::now();
    let tasks = generate(count);
    let bytes: usize = tasks.iter().map(|t| t.description.len() + t.notes.len()).sum();
    println!(
        "generated {count} tasks, {:.1} MB of text, in {:.2} s (not counted)",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );

    let started = Instant::now();
    let filters = Filters::compile(&config.intake, &config.filters).expect("seed rules compile");
    println!("compiled the seed rules in {:.2} ms", started.elapsed().as_secs_f64() * 1e3);
    pass("seed rules with the gate", &filters, &tasks, now);

    let mut ungated = config.intake.clone();
    ungated.qualifying_sources.clear();
    let filters = Filters::compile(&ungated, &config.filters).expect("seed rules compile");
    pass("seed rules without the gate", &filters, &tasks, now);
}
