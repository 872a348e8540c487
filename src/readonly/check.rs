//! `agent-dispatch check`: prove, on this machine and offline, that an agent CLI cannot write.
//!
//! A scratch git repository with an uncommitted change; the adapter's loopback fake model
//! endpoint scripting write attempts and a read; the real CLI started by the same code path as a
//! dispatch (`runner::run`) with the exact production launch configuration — only the
//! model endpoint and a throw-away credential are swapped in. It passes only if every write was
//! refused by the sandbox (evidence captured), nothing appeared, the tree is byte-identical
//! (`.git` included) and the read worked.

use std::path::Path;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::adapter::{Adapter, Env, LaunchContext};
use crate::contract::{FailureKind, NoticeLevel, StreamEvent};
use crate::readonly::probe::{ProbeKind, ProbeResult};
use crate::readonly::record::check_key;
use crate::readonly::report::{CheckReport, ProbeReport, Verdict};
use crate::readonly::scratch::{ScratchRepo, UNCOMMITTED_MARKER};
use crate::readonly::snapshot::Snapshot;
use crate::request::ValidRequest;
use crate::runner;
use crate::supervise::Supervisor;

/// Texts only a sandbox (or the kernel under it) produces when a write is refused.
pub const DENIAL_MARKERS: &[&str] = &[
    "read-only file system",
    "operation not permitted",
    "permission denied",
    "writing is blocked by read-only sandbox",
];

/// How one probe went, from its output and whether its target appeared under `cwd`.
pub fn judge(probe: ProbeResult, cwd: &Path) -> ProbeReport {
    let output = probe.output.clone();
    let line_with = |needles: &[&str]| {
        output.as_deref().and_then(|o| {
            o.lines()
                .find(|l| {
                    let l = l.to_lowercase();
                    needles.iter().any(|n| l.contains(n))
                })
                .map(|l| l.trim().chars().take(300).collect::<String>())
        })
    };
    let (verdict, evidence) = match probe.kind {
        ProbeKind::Read => match line_with(&[&UNCOMMITTED_MARKER.to_lowercase()]) {
            Some(e) => (Verdict::ReadOk, Some(e)),
            None if output.is_none() => (Verdict::NotAttempted, None),
            None => (Verdict::ReadFailed, None),
        },
        ProbeKind::SecretRead => {
            let secret = probe
                .target
                .as_deref()
                .and_then(|t| std::fs::read_to_string(t).ok())
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty());
            match (&output, secret) {
                (None, _) => (Verdict::NotAttempted, None),
                (Some(o), Some(s)) if o.contains(&s) => (Verdict::SecretLeaked, None),
                (Some(_), None) => (Verdict::NoEvidence, None),
                (Some(_), Some(_)) => match line_with(DENIAL_MARKERS) {
                    Some(e) => (Verdict::Denied, Some(e)),
                    None => (Verdict::NoEvidence, None),
                },
            }
        }
        _ => {
            let written = probe
                .target
                .as_deref()
                .is_some_and(|t| cwd.join(t).symlink_metadata().is_ok());
            if written {
                (Verdict::Written, None)
            } else if output.is_none() {
                (Verdict::NotAttempted, None)
            } else {
                match line_with(DENIAL_MARKERS) {
                    Some(e) => (Verdict::Denied, Some(e)),
                    None => (Verdict::NoEvidence, None),
                }
            }
        }
    };
    ProbeReport {
        probe,
        verdict,
        evidence,
    }
}

/// Run the check for `adapter` now (no record is consulted or written here).
pub async fn run_check(
    adapter: &'static dyn Adapter,
    parent_env: &Env,
    supervisor: &Supervisor,
    cancel: CancellationToken,
) -> CheckReport {
    let started = Instant::now();
    let mut report = run_check_inner(adapter, parent_env, supervisor, cancel).await;
    report.duration_ms = started.elapsed().as_millis() as u64;
    report
}

async fn run_check_inner(
    adapter: &'static dyn Adapter,
    parent_env: &Env,
    supervisor: &Supervisor,
    cancel: CancellationToken,
) -> CheckReport {
    let id = adapter.id();
    let program = match crate::program::resolve_program(adapter, parent_env) {
        Ok(p) => p,
        Err(_) => {
            return CheckReport::failed(
                id,
                format!(
                    "{} CLI `{}` was not found on PATH",
                    adapter.display_name(),
                    adapter.program()
                ),
                Some(format!("install it: {}", adapter.install_hint())),
            );
        }
    };
    let key = match check_key(adapter, &program, parent_env) {
        Ok(k) => k,
        Err(f) => return CheckReport::failed(id, f.message, None),
    };
    let version = match crate::program::version(adapter, &program, parent_env, supervisor).await {
        Ok(v) => v,
        Err(f) => return CheckReport::failed(id, f.message, None),
    };
    let Some(self_check) = adapter.self_check() else {
        return CheckReport::failed(
            id,
            format!("{} has no read-only self-check", adapter.display_name()),
            None,
        );
    };
    let repo = match ScratchRepo::create(None) {
        Ok(r) => r,
        Err(e) => {
            return CheckReport::failed(
                id,
                format!("cannot create a scratch repository: {e}"),
                None,
            );
        }
    };
    let cwd = match repo.path().canonicalize() {
        Ok(c) => c,
        Err(e) => return CheckReport::failed(id, format!("scratch repository: {e}"), None),
    };
    let before = match Snapshot::take(&cwd) {
        Ok(s) => s,
        Err(e) => {
            return CheckReport::failed(
                id,
                format!("cannot snapshot the scratch repository: {e}"),
                None,
            );
        }
    };
    let probes = match self_check.start_probe_endpoint(&cwd).await {
        Ok(p) => p,
        Err(e) => {
            return CheckReport::failed(
                id,
                format!("cannot start the fake model endpoint: {e}"),
                None,
            );
        }
    };
    let endpoint = probes.endpoint();
    let prompt = crate::prompt::assemble("Run the read-only probes.", None);
    let launch_args = adapter
        .launch(&LaunchContext {
            program: &program,
            prompt: &prompt,
            model: None,
            effort: None,
            cwd: &cwd,
            parent_env,
            endpoint: Some(&endpoint),
        })
        .map(|l| l.display_args())
        .unwrap_or_default();
    let req = ValidRequest {
        adapter,
        task: "Run the read-only probes.".into(),
        scope: None,
        model: None,
        effort: None,
        cwd: cwd.clone(),
    };
    // The run's warnings can name what is wrong on this machine precisely (a path, a setting).
    let mut warnings = Vec::new();
    let mut sink = |e: StreamEvent| {
        if let StreamEvent::Notice {
            level: NoticeLevel::Warning,
            message,
        } = e
        {
            warnings.push(message);
        }
    };
    let result = runner::run(
        &req,
        &program,
        parent_env,
        Some(&endpoint),
        supervisor,
        cancel,
        &mut sink,
    )
    .await;
    let after = Snapshot::take(&cwd).unwrap_or_default();
    let tree_changes = before.diff(&after);

    let reports: Vec<ProbeReport> = probes
        .results()
        .into_iter()
        .map(|p| judge(p, &cwd))
        .collect();
    let mut problems = Vec::new();
    let mut fixes = Vec::new();
    if let Some(f) = &result.failure {
        problems.push(format!(
            "the check's run failed ({}): {}",
            f.kind, f.message
        ));
        if f.kind == FailureKind::ReadOnlyUnavailable || f.kind == FailureKind::InvalidRequest {
            fixes.push(f.message.clone());
        }
    }
    for p in &reports {
        let what = match p.verdict {
            Verdict::Denied | Verdict::ReadOk => continue,
            Verdict::Written => "a write succeeded: the sandbox is not read-only",
            Verdict::NoEvidence => {
                "a write or a secret read was not refused by the sandbox (no denial in its output)"
            }
            Verdict::NotAttempted => "a probe never ran",
            Verdict::SecretLeaked => {
                "a secret outside the allowed paths was read and reached the model"
            }
            Verdict::ReadFailed => {
                "the read (`git diff`) did not show the uncommitted change: sandboxed commands are not running"
            }
        };
        problems.push(format!("{what} [{}]", p.probe.command));
    }
    if reports.is_empty() {
        problems.push("no probe was answered".into());
    }
    if !tree_changes.is_empty() {
        problems.push(format!(
            "the scratch tree changed: {}",
            tree_changes.join(", ")
        ));
    }
    if problems
        .iter()
        .any(|p| p.contains("sandboxed commands are not running") || p.contains("bwrap: execvp"))
    {
        // The first warning is the adapter's own diagnosis when it has one (pre-flight
        // notices come before anything the CLI prints), naming the exact cause.
        match warnings.first() {
            Some(w) => fixes.push(w.clone()),
            None => fixes.push("the CLI's sandbox could not start commands here: check that bubblewrap works (user namespaces) and that the CLI's home is not under the temp directory".into()),
        }
    }
    if reports.iter().any(|p| p.verdict == Verdict::Written) {
        fixes.push("a setting re-enables writes: check the CLI's configuration and this build's launch flags".into());
    }
    drop(probes);
    drop(repo);
    CheckReport {
        agent: id.to_owned(),
        passed: problems.is_empty(),
        program: Some(key.program.clone()),
        version: Some(version),
        covers: Some(key),
        launch_args,
        probes: reports,
        tree_identical: tree_changes.is_empty(),
        tree_changes,
        problems,
        fixes,
        from_record: false,
        duration_ms: 0,
    }
}
