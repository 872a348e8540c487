//! The wire types every adapter produces and every consumer (the CLI's JSONL protocol, the Pi
//! extension) reads. Nothing here knows about a particular agent CLI.
//!
//! All types serialise with camelCase fields and kebab-case enum tags; `docs/protocol.schema.json`
//! describes them and a test validates real output against it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a caller asks for. Built from CLI flags; validated by [`crate::request::validate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchRequest {
    pub agent: String,
    pub task: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    pub cwd: PathBuf,
}

/// One normalised thing that happened inside the agent run. The Pi extension renders these
/// without knowing which CLI produced them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum StreamEvent {
    /// Assistant prose (a message or a part of the final answer).
    Text { text: String },
    /// A shell/tool command the agent ran, with its state as far as it is known.
    #[serde(rename_all = "camelCase")]
    Command {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        command: String,
        status: CommandStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
        /// The last few KiB of the command's output, when the CLI reports it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_tail: Option<String>,
    },
    /// Something a person can follow that is neither prose nor a command: reasoning summaries,
    /// plans and to-do lists, file changes the agent attempted.
    Activity { kind: ActivityKind, text: String },
    /// What the running CLI itself reported about its session and identity.
    #[serde(rename_all = "camelCase")]
    Metadata {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        effort: Option<String>,
    },
    /// Not a failure: retries, warnings, permission denials, skipped validation.
    Notice { level: NoticeLevel, message: String },
    /// The CLI reported an error that ends the run (an error envelope).
    Error { message: String },
    /// A recognised terminal envelope was parsed (not merely: stdout closed).
    Done { success: bool },
    /// The usage the CLI has reported so far in this run, counted once (a running total, not a
    /// delta). Token budgets are enforced on these.
    Usage { usage: Usage },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommandStatus {
    Started,
    Completed,
    Failed,
    Declined,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActivityKind {
    Reasoning,
    Plan,
    FileChange,
    Tool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoticeLevel {
    Info,
    Warning,
}

/// Token usage, normalised: `input` excludes cache reads and writes, `reasoning` is the part of
/// `output` the model spent thinking (informational, already inside `output`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub output: u64,
    pub reasoning: u64,
    /// Cost in US dollars when the CLI reports it; never estimated here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Usage {
    pub fn total_tokens(&self) -> u64 {
        self.input + self.cache_read + self.cache_write + self.output
    }
}

/// A value the CLI may or may not tell us. "Pending" (not yet known), "not reported" (the CLI
/// never says) and a confirmed value are three different states and are never conflated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(tag = "state", content = "value", rename_all = "kebab-case")]
pub enum Reported {
    #[default]
    Pending,
    NotReported,
    Confirmed(String),
}

impl Reported {
    /// At the end of a run, what was never confirmed was not reported.
    pub fn settle(self) -> Self {
        match self {
            Reported::Pending => Reported::NotReported,
            other => other,
        }
    }
}

/// Requested model/effort (what the caller asked for, `None` = the CLI's default) kept apart
/// from what the running CLI confirmed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    pub agent: String,
    pub requested: Requested,
    pub confirmed: Confirmed,
}

impl Identity {
    /// The identity a request starts with: requested values, nothing confirmed yet.
    pub fn requested(agent: &str, model: Option<&str>, effort: Option<&str>) -> Self {
        Identity {
            agent: agent.to_owned(),
            requested: Requested {
                model: model.map(str::to_owned),
                effort: effort.map(str::to_owned),
            },
            confirmed: Confirmed::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Requested {
    pub model: Option<String>,
    pub effort: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Confirmed {
    pub model: Reported,
    pub effort: Reported,
}

/// Why a dispatch did not succeed. Kebab-case on the wire; stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    InvalidRequest,
    UnsupportedAgent,
    NotInstalled,
    SpawnFailed,
    ReadOnlyUnavailable,
    /// The CLI has no credentials at all (checked locally before the run; nothing ran).
    NotLoggedIn,
    NonzeroExit,
    Signal,
    ErrorEnvelope,
    MalformedStream,
    IncompleteStream,
    Cancelled,
    /// The dispatch's wall-clock limit passed; the tree was stopped as on a cancel.
    Timeout,
    /// The agent reported more tokens than the dispatch's budget; stopped as on a cancel.
    BudgetExceeded,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::InvalidRequest => "invalid-request",
            FailureKind::UnsupportedAgent => "unsupported-agent",
            FailureKind::NotInstalled => "not-installed",
            FailureKind::SpawnFailed => "spawn-failed",
            FailureKind::ReadOnlyUnavailable => "read-only-unavailable",
            FailureKind::NotLoggedIn => "not-logged-in",
            FailureKind::NonzeroExit => "nonzero-exit",
            FailureKind::Signal => "signal",
            FailureKind::ErrorEnvelope => "error-envelope",
            FailureKind::MalformedStream => "malformed-stream",
            FailureKind::IncompleteStream => "incomplete-stream",
            FailureKind::Cancelled => "cancelled",
            FailureKind::Timeout => "timeout",
            FailureKind::BudgetExceeded => "budget-exceeded",
        }
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A typed failure with a message a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

impl Failure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// How the direct CLI process ended, when it was started at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

/// The one final outcome of a dispatch. `ok` is true only for exit 0 + a successful terminal
/// envelope + no parse failure; every failure still carries the usage reported so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchResult {
    pub ok: bool,
    pub text: String,
    pub usage: Option<Usage>,
    pub identity: Identity,
    pub session_id: Option<String>,
    pub failure: Option<Failure>,
    pub exit: Option<ExitInfo>,
    pub stderr_tail: String,
    pub duration_ms: u64,
    /// True when the read-only self-check was deliberately bypassed for this run.
    #[serde(default)]
    pub check_bypassed: bool,
}

impl DispatchResult {
    /// A failure before anything ran: no process, no usage, and nothing can be confirmed any
    /// more (`not-reported`, never `pending`).
    pub fn early_failure(identity: Identity, failure: Failure) -> Self {
        let identity = Identity {
            confirmed: Confirmed {
                model: identity.confirmed.model.settle(),
                effort: identity.confirmed.effort.settle(),
            },
            ..identity
        };
        Self {
            ok: false,
            text: String::new(),
            usage: None,
            identity,
            session_id: None,
            failure: Some(failure),
            exit: None,
            stderr_tail: String::new(),
            duration_ms: 0,
            check_bypassed: false,
        }
    }
}
