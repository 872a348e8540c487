//! Offline self-testing: loopback fake model endpoints that script an agent's turns (used by the
//! project's real-CLI tests and by `agent-dispatch check`), scratch repositories, tree snapshots.

pub mod check;
pub mod fake_messages;
pub mod fake_responses;
pub mod policy;
pub mod record;
pub mod report;
pub mod scratch;
pub mod server;
pub mod snapshot;
