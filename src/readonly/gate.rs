//! The read-only gate a dispatch passes before its CLI starts: a dispatch needs a passing check
//! on record for this CLI, the files that enforce its sandbox and this launch (see
//! [`record`]); without one it runs the check first and refuses if it fails. Also the one
//! deliberate, documented way past it.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

use crate::adapter::{Adapter, Env};
use crate::contract::{Failure, FailureKind, NoticeLevel, StreamEvent};
use crate::readonly::check::run_check;
use crate::readonly::record::{self, CheckRecord, check_key};
use crate::readonly::report::CheckReport;
use crate::supervise::Supervisor;

/// Run the check and record a pass.
pub async fn check_and_record(
    adapter: &'static dyn Adapter,
    parent_env: &Env,
    supervisor: &Supervisor,
    cancel: CancellationToken,
) -> CheckReport {
    let report = run_check(adapter, parent_env, supervisor, cancel).await;
    if report.passed
        && let (Some(dir), Some(key), Some(version)) = (
            record::cache_dir(parent_env),
            report.covers.clone(),
            report.version.clone(),
        )
    {
        let rec = CheckRecord {
            key,
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
    let dir = record::cache_dir(parent_env);
    if let Some(dir) = &dir
        && record::load(dir, &key).is_some()
    {
        return Ok(());
    }
    let changes = dir
        .as_deref()
        .and_then(|d| record::latest(d, &key.agent, &key.program))
        .map(|old| key.changes_from(&old.key))
        .unwrap_or_default();
    let message = if changes.is_empty() {
        format!(
            "First dispatch to {} at {} with this configuration: running the offline read-only check…",
            adapter.display_name(),
            key.program
        )
    } else {
        format!(
            "Since {}'s last passing check, {}: running the offline read-only check again…",
            adapter.display_name(),
            changes.join("; ")
        )
    };
    sink(StreamEvent::Notice {
        level: NoticeLevel::Info,
        message,
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

/// Whether a dispatch must pass the gate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GatePolicy {
    /// Require a passing check on record for this CLI and launch configuration; run the check
    /// first when there is none, and refuse if it fails.
    #[default]
    Enforce,
    /// Deliberately skipped (tests with fake CLIs, via [`SKIP_CHECK_VAR`]); every result says so.
    Bypass,
}

/// The deliberate, documented way past the policy, for tests that drive fake CLIs. Any other
/// non-empty value is an error, so the bypass cannot be tripped by accident.
pub const SKIP_CHECK_VAR: &str = "AGENT_DISPATCH_SKIP_CHECK";
pub const SKIP_CHECK_VALUE: &str = "yes-skip-the-read-only-check";

/// The policy the caller's environment asks for.
pub fn policy_from_env(env: &Env) -> Result<GatePolicy, Failure> {
    match env.get(std::ffi::OsStr::new(SKIP_CHECK_VAR)) {
        None => Ok(GatePolicy::Enforce),
        Some(v) if v.is_empty() => Ok(GatePolicy::Enforce),
        Some(v) if v == SKIP_CHECK_VALUE => Ok(GatePolicy::Bypass),
        Some(v) => Err(Failure::new(
            FailureKind::InvalidRequest,
            format!(
                "{SKIP_CHECK_VAR}={:?} is not recognised; to skip the read-only check (tests with fake CLIs only) set it to exactly {SKIP_CHECK_VALUE:?}",
                v.to_string_lossy()
            ),
        )),
    }
}
