//! The exact `claude` command line:
//!
//! ```text
//! claude -p --output-format stream-json --verbose --safe-mode --strict-mcp-config
//!        --setting-sources user --no-session-persistence --tools Read,Bash --settings <json>
//!        [--model M] [--effort E] -- <prompt>
//! ```
//!
//! - `--setting-sources user`: the repository under review is hostile input; its
//!   `.claude/settings.json` and `settings.local.json` are never loaded (verified on 2.1.332:
//!   their `apiKeyHelper` ran outside the sandbox and their `env` redirected model traffic with
//!   the user's token; with this flag both, and their permission rules, hooks and helpers, are
//!   inert). The user's own settings and the `--settings` below still apply;
//! - `--safe-mode`: no CLAUDE.md, skills, plugins, hooks, MCP servers, custom agents from any
//!   settings source; `--strict-mcp-config`: no MCP server at all (none is given);
//! - `--tools Read,Bash`: the only tools (no Edit/Write/NotebookEdit, no web tools);
//! - `--no-session-persistence`: nothing lands in the user's session history;
//! - `--settings`: the sandbox and hook settings of [`super::settings`];
//! - stdin is null and the prompt follows `--`, or — longer than one argv string may be —
//!   comes on stdin, written then closed (`claude -p` reads its prompt from stdin when none is
//!   given; verified with a 2 MB prompt).

use std::ffi::OsString;
use std::path::PathBuf;

use crate::adapter::LaunchContext;
use crate::contract::{Failure, FailureKind};
use crate::launch::{Launch, prompt_transport};

use super::git_home::GitHome;
use super::{env, settings};

/// The flags every launch carries, before `--settings`.
pub const FIXED_FLAGS: &[&str] = &[
    "-p",
    "--output-format",
    "stream-json",
    "--verbose",
    "--safe-mode",
    "--strict-mcp-config",
    "--setting-sources",
    "user",
    "--no-session-persistence",
    "--tools",
    "Read,Bash",
];

/// Every flag name the adapter may pass (checked against the installed `claude --help`).
pub const ALL_FLAG_NAMES: &[&str] = &[
    "--print",
    "--output-format",
    "--verbose",
    "--safe-mode",
    "--strict-mcp-config",
    "--setting-sources",
    "--no-session-persistence",
    "--tools",
    "--settings",
    "--model",
    "--effort",
];

/// The settings for a launch context, from its cwd and the caller's home and config dirs.
pub fn settings_for(ctx: &LaunchContext<'_>) -> Result<settings::Settings, Failure> {
    let var = |k: &str| {
        ctx.parent_env
            .get(std::ffi::OsStr::new(k))
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut secrets = crate::secrets::secret_paths(var("HOME").as_deref(), &var);
    secrets.extend(super::tmp::shared_tmp_secrets(ctx.parent_env));
    settings::build(ctx.cwd, &secrets)
}

/// The allowlisted environment plus `GIT_CONFIG_GLOBAL` naming the private git configuration
/// of [`GitHome`] and `CLAUDE_CODE_TMPDIR` naming the private temp dir of [`super::tmp`] (both
/// made by the preflight), sorted.
pub fn child_env(ctx: &LaunchContext<'_>) -> Vec<(OsString, OsString)> {
    let mut env = env::child_env(ctx.parent_env, ctx.endpoint);
    if let Some(g) = GitHome::for_env(ctx.parent_env) {
        env.push(("GIT_CONFIG_GLOBAL".into(), g.config_path().into()));
    }
    if let Some(t) = super::tmp::private_tmp(ctx.parent_env) {
        env.push(("CLAUDE_CODE_TMPDIR".into(), t.into()));
    }
    env.sort();
    env
}

pub fn build(ctx: &LaunchContext<'_>) -> Result<Launch, Failure> {
    let settings = settings_for(ctx)?;
    let settings = serde_json::to_string(&settings).map_err(|e| {
        Failure::new(
            FailureKind::SpawnFailed,
            format!("could not encode settings: {e}"),
        )
    })?;
    let mut args: Vec<OsString> = FIXED_FLAGS.iter().map(OsString::from).collect();
    args.push("--settings".into());
    args.push(settings.into());
    if let Some(m) = ctx.model {
        args.push("--model".into());
        args.push(m.into());
    }
    if let Some(e) = ctx.effort {
        args.push("--effort".into());
        args.push(e.into());
    }
    let (tail, stdin) = prompt_transport(ctx.prompt);
    args.extend(tail);
    Ok(Launch {
        program: ctx.program.to_path_buf(),
        args,
        cwd: ctx.cwd.to_path_buf(),
        env: child_env(ctx),
        stdin,
        wall: None,
    })
}
