//! The Claude Code adapter (`claude -p`, pinned 2.1.332).
//!
//! - [`launch`]: the command line; [`settings`]: the sandbox settings JSON; [`env`]: the
//!   allowlisted child environment; [`events`]: the stream-json parser.
//! - Read-only comes from Claude Code's own bubblewrap sandbox (`sandbox.enabled`,
//!   `failIfUnavailable`, `denyWrite` on the tree). It needs `bwrap` and `socat`; [`preflight`]
//!   refuses a run without them (`read-only-unavailable`), and the CLI itself refuses to start
//!   its sandbox-required run without them.
//! - The sandbox leaves empty mount-point stubs in the tree; [`STUBS`] lists them for
//!   [`crate::tree_guard`].
//! - [`check`]: the probes of `agent-dispatch check` on the fake Messages endpoint;
//!   [`enforcing`]: the files its record is keyed on (native binary, `bwrap`, `socat`, settings).
//!
//! [`preflight`]: ClaudeAdapter::preflight

pub mod check;
mod credentials;
pub mod enforcing;
pub mod env;
pub mod events;
pub mod fake_api;
pub mod git_home;
pub mod launch;
pub mod settings;
pub mod tmp;

use std::ffi::OsStr;

use async_trait::async_trait;

use crate::adapter::{Adapter, Capabilities, LaunchContext, SandboxStub, StreamParser, StubBase};
use crate::contract::{Failure, FailureKind, NoticeLevel, StreamEvent};
use crate::launch::Launch;
use crate::readonly::probe::SelfCheck;
use crate::supervise::Supervisor;

pub struct ClaudeAdapter;

/// Effort levels `claude --effort` accepts (2.1.332 `--help`).
pub const EFFORTS: &[&str] = &["low", "medium", "high", "xhigh", "max"];

/// Programs Claude Code's Linux sandbox needs on `PATH`.
pub const SANDBOX_PROGRAMS: &[&str] = &["bwrap", "socat"];

const fn stub(base: StubBase, path: &'static str) -> SandboxStub {
    SandboxStub { base, path }
}

/// The empty mount-point stubs Claude Code 2.1.332's sandbox leaves behind, seen on this kind
/// of machine by snapshotting a tree before and after a run (normal repository, a cwd below
/// the top of the tree, a linked worktree, no repository). Parent directories that a fresh
/// `git init` already has (`info`, `objects/info`) are listed too, for repositories without
/// them: the tree guard only removes what a run created and what is still empty.
pub const STUBS: &[SandboxStub] = &[
    // In the cwd, the top of its working tree and the main working tree.
    stub(StubBase::Cwd, ".claude/.cc-writes"),
    stub(StubBase::Cwd, ".claude"),
    stub(StubBase::WorkTree, ".claude/.cc-writes"),
    stub(StubBase::WorkTree, ".claude"),
    stub(StubBase::MainWorkTree, ".claude/.cc-writes"),
    stub(StubBase::MainWorkTree, ".claude"),
    // The working tree's own git directory (differs from the common one in a linked worktree).
    stub(StubBase::GitDir, "NOTES_MERGE_WORKTREE"),
    stub(StubBase::GitDir, "config.worktree"),
    stub(StubBase::GitDir, "glab-cli"),
    // The repository's common git directory.
    stub(StubBase::GitCommonDir, "NOTES_MERGE_WORKTREE"),
    stub(StubBase::GitCommonDir, "config.worktree"),
    stub(StubBase::GitCommonDir, "glab-cli"),
    stub(StubBase::GitCommonDir, "info/.claude-sandbox-noreplace"),
    stub(StubBase::GitCommonDir, "info"),
    stub(
        StubBase::GitCommonDir,
        "objects/info/.claude-sandbox-noreplace",
    ),
    stub(StubBase::GitCommonDir, "objects/info/alternates"),
    stub(
        StubBase::GitCommonDir,
        "objects/info/commit-graphs/.claude-sandbox-noreplace",
    ),
    stub(StubBase::GitCommonDir, "objects/info/commit-graphs"),
    stub(StubBase::GitCommonDir, "objects/info"),
    stub(StubBase::GitCommonDir, "remotes"),
    stub(StubBase::GitCommonDir, "worktrees"),
];

/// What Claude Code's mechanisms cannot hide (each seen on 2.1.332; `docs/security.md`).
pub const LIMITS: &[&str] = &[
    "the credential Claude Code authenticates with (ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN, \
     a provider key) is in the agent's shell environment: the CLI's own scrub \
     (CLAUDE_CODE_SUBPROCESS_ENV_SCRUB) would hide it but writes stub files into the tree",
    "only the paths of the shared deny list are unreadable: a secret elsewhere (another \
     repository's .env, a key in an unusual place) and everything in the repository under review \
     are readable by the agent",
    "Claude Code's temp dir is moved off the one all of the user's Claude sessions share, but \
     all dispatches of one user share theirs (${TMPDIR:-/tmp}/agent-dispatch-<uid>/claude)",
];

/// Which of [`SANDBOX_PROGRAMS`] are missing from `path` (the child's `PATH`).
pub fn missing_sandbox_programs(path: Option<&OsStr>, cwd: &std::path::Path) -> Vec<&'static str> {
    SANDBOX_PROGRAMS
        .iter()
        .copied()
        .filter(|p| match path {
            Some(path) => which::which_in(p, Some(path), cwd).is_err(),
            None => true,
        })
        .collect()
}

#[async_trait]
impl Adapter for ClaudeAdapter {
    fn id(&self) -> &'static str {
        "claude"
    }

    fn display_name(&self) -> &'static str {
        "Claude Code"
    }

    fn program(&self) -> &'static str {
        "claude"
    }

    fn install_hint(&self) -> &'static str {
        "npm install -g @anthropic-ai/claude-code@2.1.332 (the version this build is verified against)"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            read_only_enforced: true,
            model_catalogue: false,
            reports_model: true,
            reports_effort: false,
            efforts: EFFORTS.iter().map(|e| e.to_string()).collect(),
            usage_reports: crate::adapter::UsageReports::PerMessage,
            read_only_by: crate::adapter::ReadOnlyBy::CliSandbox,
        }
    }

    fn launch(&self, ctx: &LaunchContext<'_>) -> Result<Launch, Failure> {
        launch::build(ctx)
    }

    /// Refuses a run whose sandbox cannot start (never an unsandboxed run), and notes that an
    /// `ANTHROPIC_API_KEY` in the caller's environment is not passed on.
    async fn preflight(
        &self,
        ctx: &LaunchContext<'_>,
        supervisor: &Supervisor,
    ) -> Result<Vec<StreamEvent>, Failure> {
        let missing = missing_sandbox_programs(
            ctx.parent_env
                .get(OsStr::new("PATH"))
                .map(|p| p.as_os_str()),
            ctx.cwd,
        );
        if !missing.is_empty() {
            return Err(Failure::new(
                FailureKind::ReadOnlyUnavailable,
                format!(
                    "Claude Code's sandbox cannot start: {} not found on PATH. Install them with \
                     `apt-get install bubblewrap socat`; agent-dispatch never runs Claude Code unsandboxed.",
                    missing.join(" and ")
                ),
            ));
        }
        // Validate the launch configuration up front (non-UTF-8 paths and the like).
        launch::settings_for(ctx)?;
        credentials::check(ctx, supervisor).await?;
        let mut notices = Vec::new();
        if let Some(dir) = tmp::private_tmp(ctx.parent_env) {
            tmp::ensure(&dir).map_err(|e| {
                Failure::new(
                    FailureKind::SpawnFailed,
                    format!(
                        "could not create Claude Code's private temp dir {}: {e}",
                        dir.display()
                    ),
                )
            })?;
        }
        if let Some(g) = git_home::GitHome::for_env(ctx.parent_env)
            && let Err(e) = g.ensure()
        {
            notices.push(StreamEvent::Notice {
                level: NoticeLevel::Warning,
                message: format!(
                    "could not write Claude Code's private git configuration in {} ({e}); the CLI \
                     may append `{}` to your global git ignore file",
                    g.dir.display(),
                    git_home::CC_WRITES_IGNORE
                ),
            });
        }
        if ctx.endpoint.is_none() && ctx.parent_env.contains_key(OsStr::new("ANTHROPIC_API_KEY")) {
            notices.push(StreamEvent::Notice {
                level: NoticeLevel::Info,
                message: "ANTHROPIC_API_KEY is not passed to Claude Code; it authenticates with its \
                          own login, ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN or an apiKeyHelper"
                    .to_owned(),
            });
        }
        Ok(notices)
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(events::ClaudeParser::new())
    }

    fn self_check(&self) -> Option<&dyn SelfCheck> {
        Some(&check::ClaudeSelfCheck)
    }

    fn sandbox_stubs(&self) -> &'static [SandboxStub] {
        STUBS
    }

    fn limits(&self) -> &'static [&'static str] {
        LIMITS
    }

    fn enforcing_files(
        &self,
        program: &std::path::Path,
        parent_env: &crate::adapter::Env,
    ) -> Vec<crate::adapter::EnforcingFile> {
        enforcing::files(program, parent_env)
    }
}
