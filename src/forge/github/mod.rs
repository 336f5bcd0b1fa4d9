//! The GitHub forge. (Temporary: only the HTTP client; the forge itself replaces this file.)

pub mod auth;
pub mod client;
pub mod rate;

pub use auth::{AppSettings, Secret, TokenSources};
pub use client::{GitHubClient, GitHubError, RequestCounts};
pub use rate::RateStatus;
