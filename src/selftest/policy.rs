//! The dispatch policy around the read-only check: a dispatch needs a passing check on record
//! for this CLI (path and binary identity) and launch configuration; without one it runs the
//! check first and refuses if it fails. Also the one deliberate, documented way past it.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::adapter::{Adapter, Env, LaunchContext};
use crate::contract::{Failure, FailureKind, NoticeLevel, StreamEvent};
use crate::runner::CheckPolicy;
use crate::selftest::check::run_check;
use crate::selftest::record::{self, CheckKey, CheckRecord};
use crate::selftest::report::CheckReport;
use crate::supervise::Supervisor;

/// Hash of the production launch configuration: program, argv and the names of the child's
/// environment variables, for a canonical request (placeholder prompt, cwd `/`, no model).
pub fn launch_fingerprint(
    adapter: &dyn Adapter,
    program: &Path,
    parent_env: &Env,
) -> Result<String, Failure> {
    let ctx = LaunchContext {
        program,
        prompt: "<prompt>",
        model: None,
        effort: None,
        cwd: Path::new("/"),
        parent_env,
        endpoint: None,
    };
    let launch = adapter.launch(&ctx)?;
    let mut h = Sha256::new();
    h.update(launch.program.as_os_str().as_encoded_bytes());
    for a in &launch.args {
        h.update([0]);
        h.update(a.as_encoded_bytes());
    }
    let mut names: Vec<_> = launch.env.iter().map(|(k, _)| k.clone()).collect();
    names.sort();
    for n in names {
        h.update([1]);
        h.update(n.as_encoded_bytes());
    }
    Ok(format!("{:x}", h.finalize()))
}

/// The record key for this adapter on this machine. Cheap: one `stat`, one launch build.
pub fn check_key(
    adapter: &dyn Adapter,
    program: &Path,
    parent_env: &Env,
) -> Result<CheckKey, Failure> {
    let canonical = program
        .canonicalize()
        .unwrap_or_else(|_| program.to_path_buf());
    let binary = CheckKey::binary_identity(&canonical).map_err(|e| {
        Failure::new(
            FailureKind::NotInstalled,
            format!("{}: {e}", canonical.display()),
        )
    })?;
    Ok(CheckKey {
        agent: adapter.id().to_owned(),
        program: canonical.display().to_string(),
        binary,
        config_hash: launch_fingerprint(adapter, program, parent_env)?,
    })
}

/// Run the check and record a pass.
pub async fn check_and_record(
    adapter: &'static dyn Adapter,
    parent_env: &Env,
    supervisor: &Supervisor,
    cancel: CancellationToken,
) -> CheckReport {
    let report = run_check(adapter, parent_env, supervisor, cancel).await;
    if report.passed
        && let (Some(dir), Some(program), Some(binary), Some(version), Some(config_hash)) = (
            record::cache_dir(parent_env),
            report.program.clone(),
            report.binary.clone(),
            report.version.clone(),
            report.config_hash.clone(),
        )
    {
        {
            let rec = CheckRecord {
                key: CheckKey {
                    agent: report.agent.clone(),
                    program,
                    binary,
                    config_hash,
                },
                version,
                checked_at: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or_default(),
                evidence: report
                    .probes
                    .iter()
                    .map(|p| {
                        format!(
                            "{}: {}",
                            p.probe.command,
                            p.evidence.clone().unwrap_or_default()
                        )
                    })
                    .collect(),
            };
            // A cache we cannot write only costs a re-check next time.
            let _ = record::store(&dir, &rec);
        }
    }
    report
}

/// The policy a dispatch applies: with a passing record for this CLI path, version and launch
/// configuration, go on; without one, run the check first (progress as notices) and refuse with
/// `read-only-unavailable` and the check's reason if it fails.
pub async fn ensure_checked(
    adapter: &'static dyn Adapter,
    program: &Path,
    parent_env: &Env,
    supervisor: &Supervisor,
    cancel: CancellationToken,
    sink: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<(), Failure> {
    let key = check_key(adapter, program, parent_env)?;
    if let Some(dir) = record::cache_dir(parent_env)
        && record::load(&dir, &key).is_some()
    {
        return Ok(());
    }
    sink(StreamEvent::Notice {
        level: NoticeLevel::Info,
        message: format!(
            "First dispatch to {} at {} with this configuration: running the offline read-only check…",
            adapter.display_name(),
            key.program
        ),
    });
    let report = check_and_record(adapter, parent_env, supervisor, cancel.clone()).await;
    if cancel.is_cancelled() {
        return Err(Failure::new(
            FailureKind::Cancelled,
            "cancelled during the read-only check",
        ));
    }
    if report.passed {
        sink(StreamEvent::Notice {
            level: NoticeLevel::Info,
            message: format!(
                "Read-only check passed in {:.1} s: every write was refused by the sandbox and the tree is unchanged.",
                report.duration_ms as f64 / 1000.0
            ),
        });
        Ok(())
    } else {
        let fix = if report.fixes.is_empty() {
            String::new()
        } else {
            format!(" Fix: {}", report.fixes.join("; "))
        };
        Err(Failure::new(
            FailureKind::ReadOnlyUnavailable,
            format!(
                "{} failed the read-only check on this machine, so nothing was dispatched: {}.{fix} (run `agent-dispatch check {}` for the full report)",
                adapter.display_name(),
                report.reason(),
                adapter.id()
            ),
        ))
    }
}

/// The deliberate, documented way past the policy, for tests that drive fake CLIs. Any other
/// non-empty value is an error, so the bypass cannot be tripped by accident.
pub const SKIP_CHECK_VAR: &str = "AGENT_DISPATCH_SKIP_CHECK";
pub const SKIP_CHECK_VALUE: &str = "yes-skip-the-read-only-check";

/// The policy the caller's environment asks for.
pub fn policy_from_env(env: &Env) -> Result<CheckPolicy, Failure> {
    match env.get(std::ffi::OsStr::new(SKIP_CHECK_VAR)) {
        None => Ok(CheckPolicy::Enforce),
        Some(v) if v.is_empty() => Ok(CheckPolicy::Enforce),
        Some(v) if v == SKIP_CHECK_VALUE => Ok(CheckPolicy::Bypass),
        Some(v) => Err(Failure::new(
            FailureKind::InvalidRequest,
            format!(
                "{SKIP_CHECK_VAR}={:?} is not recognised; to skip the read-only check (tests with fake CLIs only) set it to exactly {SKIP_CHECK_VALUE:?}",
                v.to_string_lossy()
            ),
        )),
    }
}
