//! Does Claude Code have anything to authenticate with? Asked before a real run, locally and
//! without network (`claude auth status`, ~0.5 s, which sees its stored login, the allowlisted
//! token variables and an `apiKeyHelper` in the user's settings), so that a user who never
//! logged in gets the login command at once — and is told when the `ANTHROPIC_API_KEY` in their
//! environment was the credential they meant, since the dispatcher never passes it.
//!
//! A stored login (`.credentials.json` in its config dir) or a token variable answers without
//! running anything. A loopback endpoint brings its own throw-away token, and a cloud provider switch (Bedrock,
//! Vertex, Foundry) its own credentials: neither is asked about. Anything but a clear
//! `"loggedIn": false` (a timeout, unreadable output) lets the run go ahead.

use std::ffi::OsStr;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::adapter::LaunchContext;
use crate::contract::{Failure, FailureKind};
use crate::launch::{Launch, StdinPlan};
use crate::supervise::Supervisor;

/// Provider switches whose credentials are not Anthropic logins.
const PROVIDER_SWITCHES: &[&str] = &[
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
];

/// Variables that authenticate Claude Code without a stored login (and are passed on).
const TOKEN_ENV: &[&str] = &["ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"];

const STATUS_TIMEOUT: Duration = Duration::from_secs(15);

/// Fails with `not-logged-in` when Claude Code would run with no credentials at all.
pub async fn check(ctx: &LaunchContext<'_>, supervisor: &Supervisor) -> Result<(), Failure> {
    let set = |k: &str| {
        ctx.parent_env
            .get(OsStr::new(k))
            .is_some_and(|v| !v.is_empty())
    };
    if ctx.endpoint.is_some()
        || PROVIDER_SWITCHES.iter().any(|k| set(k))
        || TOKEN_ENV.iter().any(|k| set(k))
        || stored_login(ctx)
    {
        return Ok(());
    }
    // In an empty directory: a repository's own settings (an `apiKeyHelper` in
    // `.claude/settings.json`) must never run outside the sandbox, not even to ask this.
    let Ok(neutral) = tempfile::tempdir() else {
        return Ok(());
    };
    let status = Launch {
        program: ctx.program.to_path_buf(),
        args: vec!["auth".into(), "status".into(), "--json".into()],
        cwd: neutral.path().to_path_buf(),
        env: super::env::child_env(ctx.parent_env, None),
        stdin: StdinPlan::Null,
        wall: None,
    };
    let never = CancellationToken::new();
    let capture = supervisor.capture(&status, &never, 64 * 1024);
    let Ok(Ok(out)) = tokio::time::timeout(STATUS_TIMEOUT, capture).await else {
        return Ok(());
    };
    let logged_in = serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v.get("loggedIn").and_then(serde_json::Value::as_bool));
    if logged_in != Some(false) {
        return Ok(());
    }
    let dropped = if set("ANTHROPIC_API_KEY") {
        " ANTHROPIC_API_KEY is set in your environment, but agent-dispatch deliberately never \
         passes it to an agent: log in as above, or give Claude Code an apiKeyHelper in its own \
         settings."
    } else {
        ""
    };
    Err(Failure::new(
        FailureKind::NotLoggedIn,
        format!(
            "Claude Code has no credentials (`claude auth status`: not logged in), so nothing was \
             run. Log in once with `claude auth login` (or run `claude` and type /login), or set \
             ANTHROPIC_AUTH_TOKEN or CLAUDE_CODE_OAUTH_TOKEN (from `claude setup-token`).{dropped}"
        ),
    ))
}

/// A stored login: `.credentials.json` in `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
fn stored_login(ctx: &LaunchContext<'_>) -> bool {
    let var = |k: &str| {
        ctx.parent_env
            .get(OsStr::new(k))
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    let dir = var("CLAUDE_CONFIG_DIR").or_else(|| var("HOME").map(|h| h.join(".claude")));
    dir.is_some_and(|d| d.join(".credentials.json").is_file())
}
