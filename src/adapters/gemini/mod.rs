//! The Gemini CLI adapter (`gemini --prompt=…`, pinned 0.61.0).
//!
//! - [`launch`]: the command line and the wall; [`home`]: the private per-dispatch home, the
//!   enforced settings and the tool policy; [`env`]: the allowlisted child environment;
//!   [`events`]: the stream-json parser; [`check`] and [`fake_api`]: `agent-dispatch check`.
//! - Gemini CLI has no sandbox a dispatch could rely on (on Linux its `--sandbox` needs docker
//!   or podman), so read-only comes from the dispatcher's own Landlock wall ([`crate::wall`]):
//!   writes only to a private home and temp dir, reads only of the system, the CLI's and Node's
//!   installations and the repository — `~/.ssh` and the rest of `$HOME` are unreadable. A
//!   kernel without Landlock (ABI 3 or later) refuses the dispatch (`read-only-unavailable`).
//! - Failures: on an API error the CLI exits with the HTTP status mod 256 (400 → 144,
//!   500 → 244); its retries are bounded by `general.maxAttempts`.

pub mod check;
pub mod env;
pub mod events;
pub mod fake_api;
pub mod home;
pub mod launch;

use async_trait::async_trait;

use crate::adapter::{Adapter, Capabilities, LaunchContext, ReadOnlyBy, StreamParser};
use crate::contract::{Failure, FailureKind, StreamEvent};
use crate::launch::Launch;
use crate::readonly::probe::SelfCheck;
use crate::supervise::Supervisor;

pub struct GeminiAdapter;

/// The longest prompt sent to Gemini CLI. 0.61.0 echoes the prompt as one `message` line of
/// its stream; with stdout a pipe it lost everything after 192 KiB of such a line (seen with
/// 250 KiB and 300 KiB prompts; 190 KiB arrived whole).
pub const MAX_PROMPT_BYTES: usize = 160 * 1024;

#[async_trait]
impl Adapter for GeminiAdapter {
    fn id(&self) -> &'static str {
        "gemini"
    }

    fn display_name(&self) -> &'static str {
        "Gemini CLI"
    }

    fn program(&self) -> &'static str {
        "gemini"
    }

    fn install_hint(&self) -> &'static str {
        "npm install -g @google/gemini-cli@0.61.0 (the version this build is verified against)"
    }

    fn capabilities(&self) -> Capabilities {
        let abi = crate::wall::kernel_abi();
        Capabilities {
            read_only_enforced: abi.is_some_and(|a| a >= crate::wall::MIN_FS_ABI),
            model_catalogue: false,
            reports_model: true,
            reports_effort: false,
            efforts: Vec::new(),
            usage_reports: crate::adapter::UsageReports::PerTurn,
            read_only_by: ReadOnlyBy::DispatcherWall { landlock_abi: abi },
        }
    }

    fn launch(&self, ctx: &LaunchContext<'_>) -> Result<Launch, Failure> {
        launch::build(ctx)
    }

    /// Gemini CLI has no effort setting: asking for one is an error, not silently dropped. A
    /// prompt longer than [`MAX_PROMPT_BYTES`] is refused before anything starts.
    async fn preflight(
        &self,
        ctx: &LaunchContext<'_>,
        _supervisor: &Supervisor,
    ) -> Result<Vec<StreamEvent>, Failure> {
        if ctx.prompt.len() > MAX_PROMPT_BYTES {
            return Err(Failure::new(
                FailureKind::InvalidRequest,
                format!(
                    "the prompt is {} KiB; Gemini CLI 0.61.0 echoes the prompt on its output stream \
                     and loses the end of that stream when a line is that long, so prompts are \
                     limited to {} KiB for it",
                    ctx.prompt.len() / 1024,
                    MAX_PROMPT_BYTES / 1024
                ),
            ));
        }
        if let Some(e) = ctx.effort {
            return Err(Failure::new(
                FailureKind::InvalidRequest,
                format!("Gemini CLI has no reasoning-effort setting (asked for {e:?})"),
            ));
        }
        Ok(Vec::new())
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(events::GeminiParser::new())
    }

    fn self_check(&self) -> Option<&dyn SelfCheck> {
        Some(&check::GeminiSelfCheck)
    }
}
