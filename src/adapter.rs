//! The adapter contract: everything the engine needs from one agent CLI, and nothing more.
//!
//! An adapter turns a validated request into a [`Launch`] (program, argv, cwd, the *whole* child
//! environment, stdin), parses the CLI's stdout one line at a time into [`StreamEvent`]s, and says
//! what the stream established at the end ([`StreamOutcome`]). Optional hooks do pre-validation
//! and model discovery. Nothing outside `src/adapters/` branches on an agent's name: the engine,
//! the CLI and the Pi extension only see this trait and [`crate::adapters::registry`].

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::contract::{Confirmed, Failure, StreamEvent, Usage};
use crate::launch::Launch;
use crate::loopback::ModelEndpoint;
use crate::readonly::probe::SelfCheck;
use crate::supervise::Supervisor;

/// The caller's environment, as given to adapters. Adapters build the child's environment from
/// it as an allowlist; the engine never passes it through wholesale.
pub type Env = BTreeMap<OsString, OsString>;

/// Inputs to [`Adapter::launch`] and [`Adapter::preflight`].
#[derive(Debug, Clone)]
pub struct LaunchContext<'a> {
    /// The resolved CLI binary.
    pub program: &'a Path,
    /// The assembled prompt (D10).
    pub prompt: &'a str,
    pub model: Option<&'a str>,
    pub effort: Option<&'a str>,
    /// Canonical, existing working directory.
    pub cwd: &'a Path,
    /// The caller's environment, source of the child's allowlisted environment.
    pub parent_env: &'a Env,
    pub endpoint: Option<&'a ModelEndpoint>,
}

/// What an adapter can promise. Read by `agent-dispatch agents` and by the engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// The CLI's own sandbox enforces read-only for this launch configuration. An adapter
    /// without it is refused (`read-only-unavailable`), never run unsandboxed.
    pub read_only_enforced: bool,
    /// `models AGENT` and model/effort pre-validation are available.
    pub model_catalogue: bool,
    /// The CLI reports the model it actually used.
    pub reports_model: bool,
    /// The CLI reports the reasoning effort it actually used.
    pub reports_effort: bool,
    /// Effort levels the CLI accepts, when it has a fixed list.
    pub efforts: Vec<String>,
    /// How often the CLI's stream reports usage, which is how soon a token budget can trip.
    pub usage_reports: UsageReports,
    /// What enforces read-only: the CLI's own sandbox, or the dispatcher's wall.
    pub read_only_by: ReadOnlyBy,
}

/// What keeps an agent read-only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "kebab-case")]
pub enum ReadOnlyBy {
    /// The CLI's own sandbox, configured by its adapter.
    CliSandbox,
    /// The dispatcher's Landlock wall ([`crate::wall`]), with the running kernel's Landlock ABI
    /// (`None`: no Landlock here, so dispatch is refused).
    #[serde(rename_all = "camelCase")]
    DispatcherWall { landlock_abi: Option<u32> },
}

impl std::fmt::Display for ReadOnlyBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadOnlyBy::CliSandbox => f.write_str("the CLI's own sandbox"),
            ReadOnlyBy::DispatcherWall {
                landlock_abi: Some(abi),
            } => write!(f, "the dispatcher's Landlock wall (ABI {abi})"),
            ReadOnlyBy::DispatcherWall { landlock_abi: None } => {
                f.write_str("the dispatcher's Landlock wall (no Landlock on this kernel)")
            }
        }
    }
}

/// When a CLI reports token usage in its stream (a budget is enforced at the first report over
/// it, so this is how far past the budget a run can go).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UsageReports {
    /// After every model message.
    PerMessage,
    /// Only when a turn ends (for a one-turn dispatch: at the end).
    PerTurn,
    /// Never: a token budget cannot be enforced.
    None,
}

/// One entry of a model catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    pub slug: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_effort: Option<String>,
    pub efforts: Vec<String>,
    /// Hidden entries are valid but not advertised by the CLI.
    #[serde(default)]
    pub hidden: bool,
}

/// A stdout line that is not valid for this CLI's stream (ends the run as `malformed-stream`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// How the stream ended, as far as recognised terminal envelopes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Terminal {
    Success,
    /// An error envelope: the CLI said the run failed.
    Error {
        message: String,
    },
    /// The CLI refused to start because its own sandbox cannot work here (it never ran
    /// unsandboxed): classified as `read-only-unavailable`.
    SandboxUnavailable {
        message: String,
    },
}

/// What the whole stream established. Read once, after the process is gone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamOutcome {
    /// The final answer text.
    pub text: String,
    /// Usage reported so far, counted once (never summed from repeated cumulative reports).
    pub usage: Option<Usage>,
    pub session_id: Option<String>,
    /// `None`: no recognised terminal envelope was seen.
    pub terminal: Option<Terminal>,
    pub confirmed: Confirmed,
}

/// Per-run parser state. One instance per dispatch, so concurrent runs never share state.
pub trait StreamParser: Send {
    /// Parse one complete stdout line (no trailing newline). Unknown but well-formed events
    /// return `Ok(vec![])`: they are ignored and never establish completion.
    fn parse_line(&mut self, line: &str) -> Result<Vec<StreamEvent>, ParseError>;

    /// A line of stderr. Default: diagnostics only, nothing to show.
    fn stderr_line(&mut self, _line: &str) -> Option<StreamEvent> {
        None
    }

    /// What the stream established.
    fn outcome(&self) -> StreamOutcome;
}

/// Where a sandbox mount-point stub lives, relative to the run's working directory or to the
/// repository's git directory. Data for the engine's tree guard: after a run it removes exactly
/// the listed stubs that this run created and that are still empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StubBase {
    Cwd,
    /// The git directory of the working tree the cwd is in (`<root>/.git`, or
    /// `<main>/.git/worktrees/<name>` in a linked worktree).
    GitDir,
    /// The top of the working tree the cwd is in (where `.git` is).
    WorkTree,
    /// The repository's common git directory (the same as `GitDir` outside linked worktrees).
    GitCommonDir,
    /// The main working tree (the parent of a common git directory named `.git`).
    MainWorkTree,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxStub {
    pub base: StubBase,
    /// Relative path, `/`-separated.
    pub path: &'static str,
}

/// One agent CLI. Implementations live in `src/adapters/<id>/`, one folder each.
#[async_trait]
pub trait Adapter: Send + Sync {
    /// Stable id used on the command line and on the wire (`codex`, `claude`).
    fn id(&self) -> &'static str;

    /// Human name for reports.
    fn display_name(&self) -> &'static str;

    /// The executable name looked up on `PATH`.
    fn program(&self) -> &'static str;

    /// npm package a user installs the CLI from, for the not-installed message.
    fn install_hint(&self) -> &'static str;

    fn capabilities(&self) -> Capabilities;

    /// Build the exact launch. May read the user's CLI configuration; must not touch the tree.
    fn launch(&self, ctx: &LaunchContext<'_>) -> Result<Launch, Failure>;

    /// Pre-validation before the run starts (model, effort, configuration). Runs its
    /// subprocesses through `supervisor` so cancel and shutdown reach them. Returns notices
    /// to show; an `Err` starts nothing.
    async fn preflight(
        &self,
        _ctx: &LaunchContext<'_>,
        _supervisor: &Supervisor,
    ) -> Result<Vec<StreamEvent>, Failure> {
        Ok(Vec::new())
    }

    /// Fresh parser state for one run.
    fn parser(&self) -> Box<dyn StreamParser>;

    /// The live model catalogue, for adapters that have one. Read live every time.
    async fn discover_models(
        &self,
        _program: &Path,
        _parent_env: &Env,
        _supervisor: &Supervisor,
    ) -> Option<Result<Vec<ModelInfo>, Failure>> {
        None
    }

    /// Arguments that print the CLI's version.
    fn version_args(&self) -> &'static [&'static str] {
        &["--version"]
    }

    /// The scripted read-only self-check for this CLI, if it has one. An adapter without one
    /// can never pass `agent-dispatch check`, so dispatch to it is refused.
    fn self_check(&self) -> Option<&dyn SelfCheck> {
        None
    }

    /// What this adapter cannot hide or enforce, in plain sentences (`agents` shows them).
    fn limits(&self) -> &'static [&'static str] {
        &[]
    }

    /// Mount-point stubs this CLI's sandbox may leave in the tree (see [`SandboxStub`]).
    fn sandbox_stubs(&self) -> &'static [SandboxStub] {
        &[]
    }

    /// The files that decide what a launch of `program` (as found on `PATH`) from `parent_env`
    /// enforces, besides `program` itself: the native binary behind a launcher script, the
    /// sandbox helpers as the CLI will resolve them, the configuration it reads at launch. The
    /// read-only check's record is keyed on them, so changing one runs the check again. Cheap:
    /// stats and small reads, never a subprocess. Default: none.
    fn enforcing_files(&self, _program: &Path, _parent_env: &Env) -> Vec<EnforcingFile> {
        Vec::new()
    }
}

/// A file that decides what a launch enforces (see [`Adapter::enforcing_files`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnforcingFile {
    pub role: FileRole,
    pub path: PathBuf,
}

/// Why a file is in the read-only check's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileRole {
    /// The CLI as found on `PATH` (an npm shim, a wrapper, or the native binary itself).
    Cli,
    /// The native binary that applies the sandbox (what an npm shim starts).
    NativeCli,
    /// An interpreter the CLI's launcher script runs under (`node` for an npm shim).
    Interpreter,
    /// A program the sandbox is made of (`bwrap`, `socat`), as the CLI will resolve it.
    SandboxHelper,
    /// Configuration read at launch (the user's, a profile, the machine's managed settings);
    /// a missing file counts too, since creating it changes the launch.
    Config,
}
