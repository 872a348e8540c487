//! agent-dispatch: run another coding-agent CLI as a blocking, read-only subagent.
//!
//! Layers, bottom up: [`contract`] (wire types) → [`adapter`] (the per-CLI contract and the
//! registry) → [`adapters`] (one folder per CLI) → [`supervise`] (process groups, cleanup) →
//! [`runner`] (spawn, frame, parse, classify) → [`protocol`] (versioned JSONL for callers) →
//! [`selftest`] (loopback fake model endpoints and the read-only `check`).

pub mod adapter;
pub mod adapters;
pub mod contract;
pub mod env;
pub mod prompt;
pub mod protocol;
pub mod request;
pub mod runner;
pub mod selftest;
pub mod supervise;
pub mod tree_guard;
