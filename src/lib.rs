//! executor: turns a tracker backlog into reviewed, CI-green pull requests by running AI coding agents
//! in git worktrees. See ARCHITECTURE.md for the map.

pub mod analyzer;
pub mod budget;
pub mod cli;
pub mod config;
pub mod domain;
pub mod env_file;
pub mod filter;
pub mod forge;
pub mod github;
pub mod gitlab;
pub mod import;
pub mod instance_lock;
pub mod intake;
pub mod jira;
pub mod linear;
pub mod redact;
pub mod runner;
pub mod schedule;
pub mod shared_blocks;
pub mod store;
pub mod web;
pub mod worker;
pub mod workspace;
pub mod writeback;
