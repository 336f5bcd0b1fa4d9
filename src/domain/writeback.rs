//! Write-back: what executor tells a task's tracker, and where each message stands.

/// An event a tracker hears of (`[[sources]] writeback`). Stored by name, never read from a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WritebackEvent {
    /// The run opened its pull request (the link, the branch).
    PrOpened,
    /// The run completed: ready for a human's review, with the summary the human is sent.
    Complete,
    /// executor gave the run up: why, and what a human can do.
    Abandoned,
    /// The triage or a filter skipped the task (only when the source asks for it).
    Skipped,
    /// A human approved the task in executor (only when the source asks for it).
    Approved,
    /// The run's pull request was merged (only when the source asks for it).
    Merged,
    /// A plan waits for a human's approval: the plan itself, and how to approve it.
    Plan,
    /// A worker asked a question and the run waits for the answer.
    Question,
}

super::named_enum!(WritebackEvent, "write-back event", {
    PrOpened => "pr_opened",
    Complete => "complete",
    Abandoned => "abandoned",
    Skipped => "skipped",
    Approved => "approved",
    Merged => "merged",
    Plan => "plan",
    Question => "question",
});

impl WritebackEvent {
    /// What a source writes back when its config does not say.
    pub const DEFAULT: &'static [WritebackEvent] = &[
        WritebackEvent::PrOpened,
        WritebackEvent::Complete,
        WritebackEvent::Abandoned,
        WritebackEvent::Plan,
        WritebackEvent::Question,
    ];
}

/// Where one message stands in the outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WritebackStatus {
    /// Recorded; not known to be in the tracker yet (tried again after its back-off).
    Pending,
    /// The tracker answered with the comment's id.
    Delivered,
    /// The tracker refused for good (401, 403, 404): the human was told, it is not tried again.
    Refused,
    /// Failed too often for a passing fault; the human was told.
    GivenUp,
    /// No longer true when its turn came (a skip the task no longer has): not sent.
    Withdrawn,
}

super::named_enum!(WritebackStatus, "write-back status", {
    Pending => "pending",
    Delivered => "delivered",
    Refused => "refused",
    GivenUp => "given_up",
    Withdrawn => "withdrawn",
});
