//! Does Codex have anything to authenticate with? Asked before a real run, locally and without
//! network (`codex login status`, ~0.1 s), so that a user who never logged in gets the login
//! command at once instead of half a minute of `Reconnecting… N/5` and a connection error.
//!
//! A stored login file (`$CODEX_HOME/auth.json`) answers without running anything. Only the
//! built-in OpenAI provider is asked about: a user-defined provider or gateway brings
//! its own credential scheme, a loopback endpoint its own throw-away key, and `CODEX_API_KEY` /
//! `CODEX_ACCESS_TOKEN` authenticate a run without a login. Anything but a clear "Not logged in"
//! (a timeout, another message) lets the run go ahead: this check only saves time.

use std::ffi::OsStr;

use crate::adapter::LaunchContext;
use crate::contract::{Failure, FailureKind};
use crate::supervise::Supervisor;

use super::launch::{self, Resolved};

/// Variables that authenticate `codex exec` without a stored login.
const AUTH_ENV: &[&str] = &["CODEX_API_KEY", "CODEX_ACCESS_TOKEN"];

/// What `codex login status` prints (on stderr, exit 1) when there is no stored credential.
const NOT_LOGGED_IN: &str = "Not logged in";

/// Fails with `not-logged-in` when Codex would run with no credentials at all.
pub async fn check(
    ctx: &LaunchContext<'_>,
    resolved: &Resolved,
    supervisor: &Supervisor,
) -> Result<(), Failure> {
    let set = |k: &str| {
        ctx.parent_env
            .get(OsStr::new(k))
            .is_some_and(|v| !v.is_empty())
    };
    let own_provider = resolved
        .defaults
        .provider
        .as_ref()
        .is_some_and(|p| p.is_user_defined())
        || resolved.defaults.openai_base_url.is_some();
    if ctx.endpoint.is_some() || own_provider || AUTH_ENV.iter().any(|k| set(k)) {
        return Ok(());
    }
    if super::config::codex_home(ctx.parent_env).is_ok_and(|h| h.join("auth.json").is_file()) {
        return Ok(());
    }
    // Outside the repository: nothing of a project's configuration is read for this.
    let cwd = std::env::temp_dir();
    let status = launch::helper(ctx.program, &cwd, &["login", "status"], resolved);
    let Ok(out) = super::probe(supervisor, status).await else {
        return Ok(());
    };
    let said = |b: &[u8]| String::from_utf8_lossy(b).contains(NOT_LOGGED_IN);
    if out.status.success() || !(said(&out.stderr) || said(&out.stdout)) {
        return Ok(());
    }
    let dropped = if set("OPENAI_API_KEY") {
        " OPENAI_API_KEY is set in your environment, but agent-dispatch deliberately never passes \
         it to an agent; store it as Codex's own login instead (the second command)."
    } else {
        ""
    };
    Err(Failure::new(
        FailureKind::NotLoggedIn,
        format!(
            "Codex has no credentials (`codex login status`: \"{NOT_LOGGED_IN}\"), so nothing was \
             run. Log in once with `codex login` (ChatGPT account) or \
             `printenv OPENAI_API_KEY | codex login --with-api-key`, or set CODEX_API_KEY.{dropped}"
        ),
    ))
}
