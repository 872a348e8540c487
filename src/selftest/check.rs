//! `agent-dispatch check`: prove, on this machine and offline, that an agent CLI cannot write.
//!
//! A scratch git repository with an uncommitted change; the adapter's loopback fake model
//! endpoint scripting write attempts and a read; the real CLI started by the same code path as a
//! dispatch (`runner::dispatch_valid`) with the exact production launch configuration — only the
//! model endpoint and a throw-away credential are swapped in. It passes only if every write was
//! refused by the sandbox (evidence captured), nothing appeared, the tree is byte-identical
//! (`.git` included) and the read worked.

use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::adapter::{Adapter, Env, LaunchContext, ProbeKind, ProbeResult, StdinPlan};
use crate::contract::{Failure, FailureKind, NoticeLevel, StreamEvent};
use crate::request::ValidRequest;
use crate::runner::{self, CheckPolicy, RunOptions};
use crate::selftest::record::{self, CheckKey, CheckRecord};
use crate::selftest::scratch::{ScratchRepo, UNCOMMITTED_MARKER};
use crate::selftest::snapshot::Snapshot;
use crate::supervise::Supervisor;

/// Texts only a sandbox (or the kernel under it) produces when a write is refused.
pub const DENIAL_MARKERS: &[&str] = &[
    "read-only file system",
    "operation not permitted",
    "permission denied",
    "writing is blocked by read-only sandbox",
];

/// How one probe went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A write refused by the sandbox, with evidence, and nothing appeared.
    Denied,
    /// The write's target exists afterwards.
    Written,
    /// The write did not happen, but the output shows no sandbox refusal (not proof).
    NoEvidence,
    /// The probe never ran (the model's request was not answered).
    NotAttempted,
    /// The read worked and showed the uncommitted change.
    ReadOk,
    /// The read did not show the uncommitted change.
    ReadFailed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeReport {
    #[serde(flatten)]
    pub probe: ProbeResult,
    pub verdict: Verdict,
    /// The output line that proves the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

/// Everything `check` found out, for people (`Display`) and machines (`--json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub agent: String,
    pub passed: bool,
    pub program: Option<String>,
    /// The binary file's identity the record is keyed on.
    pub binary: Option<String>,
    pub version: Option<String>,
    pub config_hash: Option<String>,
    /// The argv of the check's run (production configuration plus the swapped-in endpoint).
    pub launch_args: Vec<String>,
    pub probes: Vec<ProbeReport>,
    pub tree_identical: bool,
    /// What changed in the scratch tree, when anything did.
    pub tree_changes: Vec<String>,
    /// Why it failed, in words; empty when it passed.
    pub problems: Vec<String>,
    /// What to do about it.
    pub fixes: Vec<String>,
    /// True when a passing record was reused and nothing ran.
    pub from_record: bool,
    pub duration_ms: u64,
}

impl CheckReport {
    fn failed(agent: &str, problem: String, fix: Option<String>) -> Self {
        Self {
            agent: agent.to_owned(),
            passed: false,
            program: None,
            binary: None,
            version: None,
            config_hash: None,
            launch_args: Vec::new(),
            probes: Vec::new(),
            tree_identical: false,
            tree_changes: Vec::new(),
            problems: vec![problem],
            fixes: fix.into_iter().collect(),
            from_record: false,
            duration_ms: 0,
        }
    }

    /// One line naming why it failed.
    pub fn reason(&self) -> String {
        if self.passed {
            "passed".into()
        } else {
            self.problems.join("; ")
        }
    }
}

impl std::fmt::Display for CheckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verdict = if self.passed { "PASS" } else { "FAIL" };
        writeln!(f, "{verdict}  {} read-only check", self.agent)?;
        if let Some(p) = &self.program {
            writeln!(
                f,
                "  CLI       {p} ({})",
                self.version.as_deref().unwrap_or("version unknown")
            )?;
        }
        if self.from_record {
            writeln!(
                f,
                "  record    a passing check for this CLI version and configuration is on record"
            )?;
        }
        if !self.launch_args.is_empty() {
            writeln!(f, "  launch    {}", self.launch_args.join(" "))?;
        }
        for p in &self.probes {
            let kind = serde_json::to_value(p.probe.kind).ok();
            let kind = kind.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
            let verdict = serde_json::to_value(p.verdict).ok();
            let verdict = verdict.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
            writeln!(f, "  {kind:<17} {verdict:<14} {}", p.probe.command)?;
            if let Some(e) = &p.evidence {
                writeln!(f, "  {:<17} evidence: {e}", "")?;
            }
        }
        if !self.probes.is_empty() {
            let tree = if self.tree_identical {
                "byte-identical before and after (.git included)"
            } else {
                "CHANGED"
            };
            writeln!(f, "  tree      {tree}")?;
        }
        for c in &self.tree_changes {
            writeln!(f, "            {c}")?;
        }
        for p in &self.problems {
            writeln!(f, "  problem   {p}")?;
        }
        for x in &self.fixes {
            writeln!(f, "  fix       {x}")?;
        }
        Ok(())
    }
}

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

/// The CLI's version, as it prints it.
pub async fn cli_version(
    adapter: &dyn Adapter,
    program: &Path,
    parent_env: &Env,
    supervisor: &Supervisor,
) -> Result<String, Failure> {
    let launch = crate::adapter::Launch {
        program: program.to_path_buf(),
        args: adapter.version_args().iter().map(Into::into).collect(),
        cwd: std::env::temp_dir(),
        env: crate::env::allowlisted(parent_env, &[], &[]),
        stdin: StdinPlan::Null,
    };
    let out = supervisor
        .capture(&launch, &CancellationToken::new(), 64 * 1024)
        .await?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() && !v.is_empty() {
        Ok(v)
    } else {
        Err(Failure::new(
            FailureKind::SpawnFailed,
            format!("`{} --version` failed", program.display()),
        ))
    }
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

fn judge(probe: ProbeResult, cwd: &Path) -> ProbeReport {
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
    let program = match runner::resolve_program(adapter, parent_env) {
        Ok(p) => p,
        Err(f) => {
            return CheckReport::failed(
                id,
                f.message,
                Some(format!("install it: {}", adapter.install_hint())),
            );
        }
    };
    let key = match check_key(adapter, &program, parent_env) {
        Ok(k) => k,
        Err(f) => return CheckReport::failed(id, f.message, None),
    };
    let version = match cli_version(adapter, &program, parent_env, supervisor).await {
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
    let opts = RunOptions {
        parent_env: parent_env.clone(),
        endpoint: Some(endpoint),
        check: CheckPolicy::IsTheCheck,
    };
    let mut sink = |_e: StreamEvent| {};
    // Boxed: a dispatch may run the check, which runs a dispatch.
    let result: crate::contract::DispatchResult = Box::pin(runner::dispatch_valid(
        &req, &opts, supervisor, cancel, &mut sink,
    ))
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
                "a write was not refused by the sandbox (no denial in its output)"
            }
            Verdict::NotAttempted => "a probe never ran",
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
        .any(|p| p.contains("sandboxed commands are not running"))
    {
        fixes.push("the CLI's sandbox could not start commands here: check that bubblewrap works (user namespaces) and, for Codex, that CODEX_HOME is not under the temp directory".into());
    }
    if reports.iter().any(|p| p.verdict == Verdict::Written) {
        fixes.push("a setting re-enables writes: check the CLI's configuration and this build's launch flags".into());
    }
    drop(probes);
    drop(repo);
    CheckReport {
        agent: id.to_owned(),
        passed: problems.is_empty(),
        program: Some(key.program),
        binary: Some(key.binary),
        version: Some(version),
        config_hash: Some(key.config_hash),
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
