//! The versioned JSONL protocol `agent-dispatch run` writes on stdout (see `docs/protocol.md`).
//!
//! Exactly one `started` line once the request is valid, any number of `event` lines, and always
//! exactly one final `result` line — also for invalid requests, failures and cancellation.

use std::io::Write;

use serde::{Deserialize, Serialize};

use crate::contract::{DispatchResult, Identity, StreamEvent};

/// Bumped on any incompatible change to a line's shape.
pub const PROTOCOL_VERSION: u32 = 1;

/// One line of output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Line {
    /// The request was valid and the dispatch begins (pre-validation may still refuse it).
    #[serde(rename_all = "camelCase")]
    Started {
        protocol: u32,
        identity: Identity,
        /// The resolved CLI binary.
        program: String,
        cwd: String,
    },
    /// One normalised stream event.
    Event { protocol: u32, event: StreamEvent },
    /// The final outcome. Always the last line.
    Result {
        protocol: u32,
        #[serde(flatten)]
        result: Box<DispatchResult>,
    },
}

impl Line {
    pub fn started(identity: Identity, program: String, cwd: String) -> Self {
        Line::Started {
            protocol: PROTOCOL_VERSION,
            identity,
            program,
            cwd,
        }
    }

    pub fn event(event: StreamEvent) -> Self {
        Line::Event {
            protocol: PROTOCOL_VERSION,
            event,
        }
    }

    pub fn result(result: DispatchResult) -> Self {
        Line::Result {
            protocol: PROTOCOL_VERSION,
            result: Box::new(result),
        }
    }
}

/// Writes protocol lines to a sink, one JSON object per line, flushed as they come so the
/// caller sees progress live.
pub struct Writer<W: Write> {
    out: W,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Self {
        Self { out }
    }

    /// Write one line. A closed stdout (the caller went away) is not an error worth dying for:
    /// the lifeline handles that case.
    pub fn write(&mut self, line: &Line) {
        let Ok(mut json) = serde_json::to_vec(line) else {
            return;
        };
        json.push(b'\n');
        let _ = self.out.write_all(&json);
        let _ = self.out.flush();
    }
}
