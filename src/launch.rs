//! What starts a CLI: the program, argv, cwd, the whole child environment and stdin.
//!
//! Below both the adapters (which build a [`Launch`]) and the supervisor (which spawns one), so
//! neither depends on the other.

use std::ffi::OsString;
use std::path::PathBuf;

/// Linux caps a single argv string at 128 KiB (MAX_ARG_STRLEN); stay well below it. Longer
/// prompts go through stdin, written then closed.
pub const MAX_PROMPT_ARG_BYTES: usize = 100 * 1024;

/// What the child reads on stdin. Never a pipe left open (D8): either nothing, or bytes that are
/// written in full and then closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdinPlan {
    Null,
    Bytes(Vec<u8>),
}

/// Everything needed to start the CLI. `env` is the complete child environment.
#[derive(Debug, Clone)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    pub stdin: StdinPlan,
    /// The dispatcher's own Landlock wall around the CLI, for CLIs without a sandbox.
    pub wall: Option<crate::wall::Wall>,
}

impl Launch {
    /// The argv as text, for reports and diagnostics.
    pub fn display_args(&self) -> Vec<String> {
        self.args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }
}

/// How the prompt reaches the CLI: after `--` as one argument, or — when it is too long for
/// one argv string — on stdin, written then closed. Returns the trailing argv and the stdin.
pub fn prompt_transport(prompt: &str) -> (Vec<OsString>, StdinPlan) {
    if prompt.len() <= MAX_PROMPT_ARG_BYTES {
        (
            vec![OsString::from("--"), OsString::from(prompt)],
            StdinPlan::Null,
        )
    } else {
        (Vec::new(), StdinPlan::Bytes(prompt.as_bytes().to_vec()))
    }
}
