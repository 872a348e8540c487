//! The Codex adapter (OpenAI Codex CLI 0.171.0, `codex exec --json`).
//!
//! * [`launch`]: the exact read-only launch line and the child's allowlisted environment.
//! * [`config`]: the user's `config.toml` (and profile), read so their model, effort and
//!   provider survive `--ignore-user-config`.
//! * [`catalogue`]: `codex debug models` / `codex doctor --json`, pre-validation.
//! * [`events`]: the JSONL stream parser.
//! * [`enforcing`]: the files the read-only check's record is keyed on (native binary, `bwrap`,
//!   configuration).
//! * [`selfcheck`]: the scripted write attempts of `agent-dispatch check`.

pub mod catalogue;
pub mod config;
mod credentials;
pub mod enforcing;
pub mod events;
pub mod fake_api;
pub mod launch;
pub mod permissions;
pub mod selfcheck;

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::adapter::{Adapter, Capabilities, Env, LaunchContext, ModelInfo, StreamParser};
use crate::contract::{Failure, FailureKind, NoticeLevel, StreamEvent};
use crate::launch::Launch;
use crate::readonly::probe::SelfCheck;
use crate::supervise::{Captured, Supervisor};
use catalogue::{Catalogue, DoctorModel};
use launch::Resolved;

/// How long a helper command (`debug models`, `doctor`) may take. `debug models` answers in
/// about 0.25 s offline; `doctor` probes the provider over the network and can take longer.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// `debug models` prints ~1 MB (it embeds each model's instructions).
const PROBE_OUTPUT_LIMIT: usize = 32 * 1024 * 1024;

/// What the Codex adapter cannot hide (shown by `agents`; `docs/security.md` says why).
pub const LIMITS: &[&str] = &[
    "only the paths of the shared deny list (and Codex's own login, history, sessions, logs and \
     state under CODEX_HOME) are unreadable: a secret elsewhere (another repository's .env, a key \
     in an unusual place) and everything in the repository under review are readable by the agent",
    "codex still loads /etc/codex/config.toml and managed configuration; such a file that defines \
     permissions.agent_dispatch_read_only could widen the dispatcher's profile (the read-only \
     check runs with it in effect)",
];

pub struct CodexAdapter;

fn notice(level: NoticeLevel, message: impl Into<String>) -> StreamEvent {
    StreamEvent::Notice {
        level,
        message: message.into(),
    }
}

fn skipped(why: &str) -> StreamEvent {
    notice(
        NoticeLevel::Warning,
        format!("codex model/effort pre-validation was skipped: {why}"),
    )
}

/// Run a short helper command under supervision: cancellable (the supervisor's scope) and
/// bounded by [`PROBE_TIMEOUT`]. A capture dropped mid-run (the timeout here, or the engine
/// dropping pre-validation on cancel) kills its process tree on the spot (`KillOnDrop`).
async fn probe(supervisor: &Supervisor, launch: Launch) -> Result<Captured, Failure> {
    let what = launch.display_args()[..2].join(" ");
    let never = CancellationToken::new();
    let capture = supervisor.capture(&launch, &never, PROBE_OUTPUT_LIMIT);
    match tokio::time::timeout(PROBE_TIMEOUT, capture).await {
        Ok(r) => r,
        Err(_) => Err(Failure::new(
            FailureKind::IncompleteStream,
            format!(
                "`codex {what}` did not finish within {} s",
                PROBE_TIMEOUT.as_secs()
            ),
        )),
    }
}

/// The line of a helper's stderr that says what went wrong: codex prints `Error: …` followed by
/// a backtrace (`Stack backtrace:`, `   0: <unknown>`, …).
fn last_stderr_line(c: &Captured) -> String {
    let text = String::from_utf8_lossy(&c.stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let is_trace = |l: &&str| {
        l.starts_with("Stack backtrace") || l.starts_with(|ch: char| ch.is_ascii_digit())
    };
    lines
        .iter()
        .find(|l| l.to_ascii_lowercase().starts_with("error"))
        .or_else(|| lines.iter().rev().find(|l| !is_trace(l)))
        .map(|l| format!(": {l}"))
        .unwrap_or_default()
}

/// A fresh, empty directory to run a helper command in. `codex debug models` and `codex doctor`
/// cannot take `--ignore-user-config`, so in a repository the user trusts they would load its
/// `.codex/config.toml` (its MCP servers included); an empty directory has no project config.
fn neutral_dir() -> Result<tempfile::TempDir, Failure> {
    tempfile::Builder::new()
        .prefix("agent-dispatch-codex-helper-")
        .tempdir()
        .map_err(|e| {
            Failure::new(
                FailureKind::SpawnFailed,
                format!("cannot create an empty directory for a codex helper command: {e}"),
            )
        })
}

/// `codex debug models`, read live (never cached), in a neutral directory.
async fn read_catalogue(
    program: &Path,
    resolved: &Resolved,
    supervisor: &Supervisor,
) -> Result<Catalogue, Failure> {
    let dir = neutral_dir()?;
    let launch = launch::helper(program, dir.path(), &["debug", "models"], resolved);
    let out = probe(supervisor, launch).await?;
    if !out.status.success() {
        return Err(Failure::new(
            FailureKind::NonzeroExit,
            format!(
                "`codex debug models` exited with {}{}",
                out.status,
                last_stderr_line(&out)
            ),
        ));
    }
    Catalogue::parse(&out.stdout).map_err(|e| Failure::new(FailureKind::MalformedStream, e))
}

/// `codex doctor --json`'s view of the configured model (read even when it exits 1), in a
/// neutral directory.
async fn doctor_model(
    program: &Path,
    resolved: &Resolved,
    supervisor: &Supervisor,
) -> Result<DoctorModel, Failure> {
    let dir = neutral_dir()?;
    let launch = launch::helper(program, dir.path(), &["doctor", "--json"], resolved);
    let out = probe(supervisor, launch).await?;
    catalogue::parse_doctor(&out.stdout).map_err(|e| {
        Failure::new(
            FailureKind::MalformedStream,
            format!("{e} (exit {}){}", out.status, last_stderr_line(&out)),
        )
    })
}

/// Codex 0.171.0 cannot start its sandbox helper when `CODEX_HOME` lies under the temp dir:
/// every command then fails (closed, not open) and no command items appear. Say so up front.
fn temp_home_notice(env: &Env) -> Option<StreamEvent> {
    let home = config::codex_home(env).ok()?;
    let tmp = env
        .get(std::ffi::OsStr::new("TMPDIR"))
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    canon(&home).starts_with(canon(&tmp)).then(|| {
        notice(
            NoticeLevel::Warning,
            format!(
                "CODEX_HOME ({}) is under the temp dir ({}); codex cannot set up its sandbox \
                 helper there, so the run fails before the agent can run anything (closed, not \
                 open). Move CODEX_HOME elsewhere.",
                home.display(),
                tmp.display()
            ),
        )
    })
}

impl CodexAdapter {
    async fn prevalidate(
        &self,
        ctx: &LaunchContext<'_>,
        resolved: &Resolved,
        supervisor: &Supervisor,
        notices: &mut Vec<StreamEvent>,
    ) -> Result<(), Failure> {
        if ctx.model.is_none() && ctx.effort.is_none() {
            return Ok(());
        }
        if ctx.endpoint.is_none()
            && let Some(p) = resolved
                .defaults
                .provider
                .as_ref()
                .filter(|p| p.is_user_defined())
        {
            notices.push(notice(
                NoticeLevel::Info,
                format!(
                    "codex model/effort pre-validation was skipped: your Codex config selects the \
                     user-defined provider {:?}, and codex's catalogue lists only OpenAI models",
                    p.id
                ),
            ));
            return Ok(());
        }
        let cat = match read_catalogue(ctx.program, resolved, supervisor).await {
            Ok(c) if !c.is_empty() => c,
            Ok(_) => {
                notices.push(skipped("`codex debug models` returned an empty catalogue"));
                return Ok(());
            }
            Err(f) if f.kind == FailureKind::Cancelled => return Err(f),
            Err(f) => {
                notices.push(skipped(&f.message));
                return Ok(());
            }
        };
        if let Some(m) = ctx.model {
            cat.check_model(m)?;
        }
        let Some(effort) = ctx.effort else {
            return Ok(());
        };
        let (model, why) = match (ctx.model, resolved.defaults.model.as_deref()) {
            (Some(m), _) => (m.to_owned(), "requested"),
            (None, Some(m)) => (m.to_owned(), "the default in your Codex config"),
            (None, None) => match doctor_model(ctx.program, resolved, supervisor).await {
                Ok(DoctorModel::Configured(m)) => (m, "configured, per `codex doctor`"),
                Ok(DoctorModel::Default) => match cat.default_model() {
                    Some(m) => (m.slug.clone(), "codex's default"),
                    None => return Ok(()),
                },
                Err(f) if f.kind == FailureKind::Cancelled => return Err(f),
                Err(f) => {
                    notices.push(skipped(&format!(
                        "the effective model for effort {effort:?} is unknown: {}",
                        f.message
                    )));
                    return Ok(());
                }
            },
        };
        match cat.find(&model) {
            Some(info) => {
                if !catalogue::check_effort(info, effort, why)? {
                    notices.push(skipped(&format!(
                        "model {model:?} lists no reasoning efforts, so effort {effort:?} was not checked"
                    )));
                }
            }
            None => notices.push(skipped(&format!(
                "model {model:?} ({why}) is not in codex's catalogue, so effort {effort:?} was not checked"
            ))),
        }
        Ok(())
    }
}

#[async_trait]
impl Adapter for CodexAdapter {
    fn id(&self) -> &'static str {
        "codex"
    }

    fn display_name(&self) -> &'static str {
        "Codex"
    }

    fn program(&self) -> &'static str {
        "codex"
    }

    fn install_hint(&self) -> &'static str {
        "npm install -g @openai/codex@0.171.0"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            read_only_enforced: true,
            model_catalogue: true,
            reports_model: false,
            reports_effort: false,
            // Effort levels differ per model; `models codex` lists them from the live catalogue.
            efforts: vec![],
            usage_reports: crate::adapter::UsageReports::PerTurn,
            read_only_by: crate::adapter::ReadOnlyBy::CliSandbox,
        }
    }

    fn launch(&self, ctx: &LaunchContext<'_>) -> Result<Launch, Failure> {
        let resolved = launch::resolve(ctx.parent_env, ctx.model, ctx.effort, ctx.endpoint)?;
        launch::build(ctx, &resolved)
    }

    async fn preflight(
        &self,
        ctx: &LaunchContext<'_>,
        supervisor: &Supervisor,
    ) -> Result<Vec<StreamEvent>, Failure> {
        let resolved = launch::resolve(ctx.parent_env, ctx.model, ctx.effort, ctx.endpoint)?;
        let mut notices: Vec<StreamEvent> = temp_home_notice(ctx.parent_env).into_iter().collect();
        credentials::check(ctx, &resolved, supervisor).await?;
        for k in &resolved.kept {
            notices.push(notice(
                NoticeLevel::Warning,
                format!(
                    "{} stays readable to the agent although it is on the secrets deny list: {}",
                    k.path.display(),
                    k.why
                ),
            ));
        }
        self.prevalidate(ctx, &resolved, supervisor, &mut notices)
            .await?;
        Ok(notices)
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(events::CodexParser::new())
    }

    fn self_check(&self) -> Option<&dyn SelfCheck> {
        Some(&selfcheck::CodexSelfCheck)
    }

    fn limits(&self) -> &'static [&'static str] {
        LIMITS
    }

    fn enforcing_files(
        &self,
        program: &Path,
        parent_env: &Env,
    ) -> Vec<crate::adapter::EnforcingFile> {
        enforcing::files(program, parent_env)
    }

    async fn discover_models(
        &self,
        program: &Path,
        parent_env: &Env,
        supervisor: &Supervisor,
    ) -> Option<Result<Vec<ModelInfo>, Failure>> {
        let found = async {
            let resolved = launch::resolve(parent_env, None, None, None)?;
            let cat = read_catalogue(program, &resolved, supervisor).await?;
            Ok(cat.models())
        };
        Some(found.await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    use crate::env::from_pairs as env;

    #[test]
    fn codex_home_under_the_temp_dir_is_flagged() {
        assert!(temp_home_notice(&env(&[("CODEX_HOME", "/tmp/x/codex")])).is_some());
        assert!(
            temp_home_notice(&env(&[
                ("CODEX_HOME", "/scratch/t/c"),
                ("TMPDIR", "/scratch/t")
            ]))
            .is_some()
        );
        assert!(temp_home_notice(&env(&[("CODEX_HOME", "/home/u/.codex")])).is_none());
        assert!(temp_home_notice(&env(&[("HOME", "/home/u")])).is_none());
    }

    #[test]
    fn helper_errors_name_the_error_line_not_the_backtrace() {
        let c = |stderr: &str| Captured {
            status: std::process::ExitStatus::from_raw(1 << 8),
            stdout: vec![],
            stderr: stderr.as_bytes().to_vec(),
        };
        assert_eq!(
            last_stderr_line(&c(
                "Error: legacy `profile` config\n\nStack backtrace:\n   0: <unknown>\n   1: <unknown>\n"
            )),
            ": Error: legacy `profile` config"
        );
        assert_eq!(last_stderr_line(&c("boom\n")), ": boom");
        assert_eq!(last_stderr_line(&c("")), "");
    }

    #[test]
    fn capabilities_are_honest() {
        let c = CodexAdapter.capabilities();
        assert!(c.read_only_enforced && c.model_catalogue);
        assert!(!c.reports_model && !c.reports_effort);
        assert!(CodexAdapter.self_check().is_some());
        // What the profile cannot hide is said, not implied.
        assert!(
            CodexAdapter
                .limits()
                .iter()
                .any(|l| l.contains("deny list"))
        );
    }
}
