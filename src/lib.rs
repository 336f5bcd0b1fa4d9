//! executor: turns a tracker backlog into reviewed, CI-green pull requests by running AI coding agents
//! in git worktrees. See ARCHITECTURE.md for the map.

pub mod domain;
pub mod worker;
