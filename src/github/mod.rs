//! The GitHub API as a service of its own: authentication (a token from the environment, `gh`, or a
//! GitHub App), the REST and GraphQL transport, rate limits and ETags. The forge (pull requests and CI),
//! the GitHub Issues task source and `/metrics` all call GitHub through one [`GitHubClient`], so they
//! share one token and one rate limit.
//!
//! Architecture invariant: this module knows nothing of pull requests, tasks or runs; it imports nothing
//! but `config`. What GitHub's answers mean is the caller's business (`forge::github::wire`,
//! `intake::source::github_issues`).

pub mod auth;
pub mod client;
mod error;
pub mod rate;

pub use crate::shared_blocks::{SharedBlock, SharedBlocks};
pub use auth::{AppSettings, Secret, TokenSources};
pub use client::{GitHubClient, RequestCounts};
pub use error::{GitHubError, with_causes};
pub use rate::RateStatus;
