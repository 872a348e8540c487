//! The read-only gate: a dispatch needs a passing `agent-dispatch check` on record for its CLI and
//! launch configuration ([`gate`], [`record`]); the check itself ([`check`], [`report`]) runs the
//! real CLI against the adapter's loopback fake model that scripts write attempts ([`probe`]) in
//! a scratch repository ([`scratch`]), and compares byte-level snapshots of it ([`snapshot`]).

pub mod check;
pub mod gate;
pub mod probe;
pub mod record;
pub mod report;
pub mod scratch;
pub mod snapshot;
