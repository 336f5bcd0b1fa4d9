//! Webhook deliveries as facts: who sent one, what it did, and which process it wakes. Stored by name
//! (`executor_webhook_deliveries`, `executor_wakes`), never read back from a message.

/// Who sent a delivery (its id is unique only per sender).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WebhookSender {
    GitHub,
    Asana,
    GitLab,
}

super::named_enum!(WebhookSender, "webhook sender", {
    GitHub => "github",
    Asana => "asana",
    GitLab => "gitlab",
});

/// What a verified delivery did. A delivery only ever marks and wakes: what happens next is decided
/// by the process it woke, from its own observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryOutcome {
    /// It named pull requests of active runs: they were marked changed and the runner woken.
    Marked,
    /// Its repository is configured but no active run owns the pull request it names.
    NotOurs,
    /// Its repository is not under `[repos]`.
    UnknownRepo,
    /// An event (or action) that says nothing executor watches.
    IgnoredEvent,
    /// It woke a process without marking anything (an Asana change wakes the analyzer's intake).
    Woke,
}

super::named_enum!(DeliveryOutcome, "delivery outcome", {
    Marked => "marked",
    NotOurs => "not_ours",
    UnknownRepo => "unknown_repo",
    IgnoredEvent => "ignored_event",
    Woke => "woke",
});

/// The process a delivery wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WakeScope {
    Runner,
    Analyzer,
}

super::named_enum!(WakeScope, "wake scope", {
    Runner => "runner",
    Analyzer => "analyzer",
});
