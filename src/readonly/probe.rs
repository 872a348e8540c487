//! The probes of `agent-dispatch check`, as data shared by every adapter's self-check: what a
//! probe tries, what the CLI sent back, and the fake endpoint that scripts them.

use std::path::Path;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::loopback::ModelEndpoint;

/// What a read-only probe tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeKind {
    /// A shell redirection into the tree (`printf x > file`).
    ShellWrite,
    /// The agent's own file-writing tool (for example Codex's `apply_patch`).
    FileToolWrite,
    /// A write from a child interpreter (`python3 -c "open(...).write(...)"`).
    InterpreterWrite,
    /// A read that must work: `git diff` of the scratch repo's uncommitted change.
    Read,
    /// A read that must fail: a secret file outside what the agent may read (its absolute
    /// path is the probe's target; its content must never reach the model).
    SecretRead,
}

/// One scripted probe and what the CLI sent back to the model as its result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeResult {
    pub kind: ProbeKind,
    /// What the fake model asked the agent to run (a command line, or a patch summary).
    pub command: String,
    /// For writes: the file it tries to create, relative to the working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The tool output the CLI returned to the model; `None` if the probe was never answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// The file the shell-write probe ([`Probe::shell_write`]) tries to create, relative to the
/// scratch repository.
pub const SHELL_TARGET: &str = "agent-dispatch-probe-shell.txt";
/// The file the `python3` write probe ([`Probe::python_write`]) tries to create.
pub const PYTHON_TARGET: &str = "agent-dispatch-probe-python.txt";

/// The key a self-check's loopback endpoint is handed (the fake accepts any).
pub const CHECK_API_KEY: &str = "agent-dispatch-check";

/// One scripted probe, as an adapter's self-check lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub kind: ProbeKind,
    /// How the probe is shown: a command line, or a patch summary.
    pub command: String,
    /// For writes: the file it tries to create, relative to the working directory.
    pub target: Option<String>,
}

impl Probe {
    pub fn new(kind: ProbeKind, command: impl Into<String>, target: Option<&str>) -> Self {
        Probe {
            kind,
            command: command.into(),
            target: target.map(str::to_owned),
        }
    }

    /// A shell redirection into the tree: `printf x > `[`SHELL_TARGET`].
    pub fn shell_write() -> Self {
        Self::new(
            ProbeKind::ShellWrite,
            format!("printf x > {SHELL_TARGET}"),
            Some(SHELL_TARGET),
        )
    }

    /// A write from a child `python3` interpreter into [`PYTHON_TARGET`].
    pub fn python_write() -> Self {
        Self::new(
            ProbeKind::InterpreterWrite,
            format!("python3 -c \"open('{PYTHON_TARGET}', 'w').write('x')\""),
            Some(PYTHON_TARGET),
        )
    }

    /// This probe with the tool output the CLI sent back for it (`None`: never answered).
    pub fn answered(&self, output: Option<String>) -> ProbeResult {
        ProbeResult {
            kind: self.kind,
            command: self.command.clone(),
            target: self.target.clone(),
            output,
        }
    }
}

/// `probes` with the tool outputs of an endpoint that answers probe `i` as the `i`-th tool
/// result the CLI sends back (a probe with no output was never answered).
pub fn answered_in_order(probes: &[Probe], outputs: Vec<String>) -> Vec<ProbeResult> {
    let mut outputs = outputs.into_iter();
    probes.iter().map(|p| p.answered(outputs.next())).collect()
}

/// The loopback endpoint a self-check hands the CLI: the fake's base URL and
/// [`CHECK_API_KEY`].
pub fn check_endpoint(base_url: String) -> ModelEndpoint {
    ModelEndpoint {
        base_url,
        api_key: CHECK_API_KEY.to_owned(),
    }
}

/// A running loopback fake model endpoint that scripts the probes.
pub trait ProbeEndpoint: Send + Sync {
    fn endpoint(&self) -> ModelEndpoint;
    /// The probes in order, with their outputs as read from the endpoint's request log.
    fn results(&self) -> Vec<ProbeResult>;
    /// How many model requests the endpoint served.
    fn requests(&self) -> usize;
}

/// An adapter's half of `agent-dispatch check`: a fake model endpoint for this CLI's API that
/// makes the agent attempt a shell write, a file-tool write (where the agent has file tools), a
/// write from a child interpreter, and a `git diff` read, in `cwd`.
#[async_trait]
pub trait SelfCheck: Send + Sync {
    async fn start_probe_endpoint(&self, cwd: &Path) -> std::io::Result<Box<dyn ProbeEndpoint>>;
}
