//! The runner (D11): validate, pre-validate, spawn under supervision, frame stdout into bounded
//! lines, parse, classify the outcome into exactly one [`DispatchResult`].

pub mod framing;
pub mod outcome;

use std::path::PathBuf;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

use crate::adapter::{Adapter, Env, LaunchContext, ModelEndpoint, StreamParser};
use crate::contract::{
    Confirmed, DispatchRequest, DispatchResult, Failure, FailureKind, Identity, NoticeLevel,
    Requested, StreamEvent,
};
use crate::request::{self, ValidRequest};
use crate::supervise::Supervisor;
use framing::StderrTail;
use outcome::Observed;

/// After the CLI's tree is gone, how long stdout/stderr may take to reach EOF (a process that
/// escaped the group could still hold a pipe; we do not wait for it forever).
const DRAIN_AFTER_CLEANUP: Duration = Duration::from_millis(500);

/// Per-dispatch options that are not part of the request.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The caller's environment (the child's is an allowlisted subset of it).
    pub parent_env: Env,
    /// A loopback model endpoint to use instead of the real one (tests, self-check).
    pub endpoint: Option<ModelEndpoint>,
    /// Whether a passing read-only check must be on record before the CLI runs.
    pub check: CheckPolicy,
}

/// The read-only check policy for one dispatch (see `selftest::check`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CheckPolicy {
    /// Require a passing check on record for this CLI path, version and configuration; run the
    /// check first when there is none, and refuse if it fails.
    #[default]
    Enforce,
    /// Deliberately skipped (tests with fake CLIs, via `AGENT_DISPATCH_SKIP_CHECK`); every
    /// result says so.
    Bypass,
    /// This dispatch *is* the check's own run.
    IsTheCheck,
}

/// The identity a request starts with: requested values, nothing confirmed yet.
pub fn initial_identity(agent: &str, model: Option<&str>, effort: Option<&str>) -> Identity {
    Identity {
        agent: agent.to_owned(),
        requested: Requested {
            model: model.map(str::to_owned),
            effort: effort.map(str::to_owned),
        },
        confirmed: Confirmed::default(),
    }
}

/// Find the adapter's CLI on the caller's `PATH`.
pub fn resolve_program(adapter: &dyn Adapter, env: &Env) -> Result<PathBuf, Failure> {
    let path = env.get(std::ffi::OsStr::new("PATH")).cloned();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    which::which_in(adapter.program(), path, cwd).map_err(|_| {
        Failure::new(
            FailureKind::NotInstalled,
            format!(
                "{} CLI `{}` was not found on PATH; install it with: {}",
                adapter.display_name(),
                adapter.program(),
                adapter.install_hint()
            ),
        )
    })
}

/// Validate, then run. Events go to `sink` as they arrive.
pub async fn dispatch(
    req: &DispatchRequest,
    opts: &RunOptions,
    supervisor: &Supervisor,
    cancel: CancellationToken,
    sink: &mut (dyn FnMut(StreamEvent) + Send),
) -> DispatchResult {
    match request::validate(req) {
        Ok(valid) => dispatch_valid(&valid, opts, supervisor, cancel, sink).await,
        Err(f) => DispatchResult::early_failure(
            initial_identity(&req.agent, req.model.as_deref(), req.effort.as_deref()),
            f,
        ),
    }
}

/// Run a validated request to its single final result.
pub async fn dispatch_valid(
    req: &ValidRequest,
    opts: &RunOptions,
    supervisor: &Supervisor,
    cancel: CancellationToken,
    sink: &mut (dyn FnMut(StreamEvent) + Send),
) -> DispatchResult {
    let started = Instant::now();
    let adapter = req.adapter;
    let identity = initial_identity(adapter.id(), req.model.as_deref(), req.effort.as_deref());
    let early = |f: Failure| {
        let mut r = DispatchResult::early_failure(identity.clone(), f);
        r.duration_ms = started.elapsed().as_millis() as u64;
        r.check_bypassed = opts.check == CheckPolicy::Bypass;
        r
    };

    if !adapter.capabilities().read_only_enforced {
        return early(Failure::new(
            FailureKind::ReadOnlyUnavailable,
            format!(
                "{} cannot be run read-only by this build; refusing to run it unsandboxed",
                adapter.display_name()
            ),
        ));
    }
    let program = match resolve_program(adapter, &opts.parent_env) {
        Ok(p) => p,
        Err(f) => return early(f),
    };
    let bypassed = opts.check == CheckPolicy::Bypass;
    match opts.check {
        CheckPolicy::Enforce => {
            let checked = tokio::select! {
                r = crate::selftest::policy::ensure_checked(
                    adapter, &program, &opts.parent_env, supervisor, cancel.clone(), sink,
                ) => r,
                _ = cancel.cancelled() => Err(cancelled_before_start()),
            };
            if let Err(f) = checked {
                return early(f);
            }
        }
        CheckPolicy::Bypass => sink(StreamEvent::Notice {
            level: NoticeLevel::Warning,
            message: format!(
                "The read-only check was deliberately skipped ({}); this run is not proven read-only on this machine.",
                crate::selftest::policy::SKIP_CHECK_VAR
            ),
        }),
        CheckPolicy::IsTheCheck => {}
    }
    let prompt = crate::prompt::assemble(&req.task, req.scope.as_deref());
    let ctx = LaunchContext {
        program: &program,
        prompt: &prompt,
        model: req.model.as_deref(),
        effort: req.effort.as_deref(),
        cwd: &req.cwd,
        parent_env: &opts.parent_env,
        endpoint: opts.endpoint.as_ref(),
    };

    if cancel.is_cancelled() {
        return early(cancelled_before_start());
    }
    let scoped = supervisor.with_cancel(cancel.clone());
    let notices = tokio::select! {
        r = adapter.preflight(&ctx, &scoped) => r,
        _ = cancel.cancelled() => Err(cancelled_before_start()),
    };
    match notices {
        Ok(notices) => notices.into_iter().for_each(&mut *sink),
        Err(f) => return early(f),
    }
    let launch = match adapter.launch(&ctx) {
        Ok(l) => l,
        Err(f) => return early(f),
    };
    // Check cancellation once more right before spawning: nothing starts after a cancel.
    if cancel.is_cancelled() {
        return early(cancelled_before_start());
    }
    let mut parser = adapter.parser();
    // Leave the tree as it was found: register before the CLI starts; once its whole process
    // tree is gone, the last dispatch out of the tree removes the sandbox's empty stubs.
    let guard = enter_tree_guard(adapter, &req.cwd, sink);
    let run = match supervisor.spawn(&launch) {
        Ok(r) => r,
        Err(f) => return early(f),
    };
    let (observed, stderr) = supervise_run(run, parser.as_mut(), &cancel, sink).await;
    leave_tree_guard(guard, sink);

    let outcome = parser.outcome();
    let mut observed = observed;
    observed.terminal = outcome.terminal.clone();
    let failure = outcome::classify(&observed);
    let confirmed = Confirmed {
        model: outcome.confirmed.model.clone().settle(),
        effort: outcome.confirmed.effort.clone().settle(),
    };
    DispatchResult {
        ok: failure.is_none(),
        text: outcome.text,
        usage: outcome.usage,
        identity: Identity {
            confirmed,
            ..identity
        },
        session_id: outcome.session_id,
        failure,
        exit: outcome::exit_info(observed.exit),
        stderr_tail: stderr,
        duration_ms: started.elapsed().as_millis() as u64,
        check_bypassed: bypassed,
    }
}

/// Register the run with [`crate::tree_guard`] when the adapter's sandbox leaves stubs. A guard
/// that cannot be set up costs only the cleanup, never the run.
fn enter_tree_guard(
    adapter: &dyn Adapter,
    cwd: &std::path::Path,
    sink: &mut (dyn FnMut(StreamEvent) + Send),
) -> Option<crate::tree_guard::TreeGuard> {
    let stubs = adapter.sandbox_stubs();
    if stubs.is_empty() {
        return None;
    }
    match crate::tree_guard::TreeGuard::enter(cwd, stubs) {
        Ok(g) => Some(g),
        Err(e) => {
            sink(StreamEvent::Notice {
                level: NoticeLevel::Warning,
                message: format!(
                    "could not register this run with the tree guard ({e}); empty sandbox stub files may stay in the tree"
                ),
            });
            None
        }
    }
}

fn leave_tree_guard(
    guard: Option<crate::tree_guard::TreeGuard>,
    sink: &mut (dyn FnMut(StreamEvent) + Send),
) {
    let Some(guard) = guard else { return };
    let message = match guard.leave() {
        Ok(r) if r.kept.is_empty() => return,
        Ok(r) => format!(
            "sandbox stubs left in place because they are no longer empty: {}",
            r.kept
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Err(e) => format!("could not clean the sandbox's stub files: {e}"),
    };
    sink(StreamEvent::Notice {
        level: NoticeLevel::Warning,
        message,
    });
}

fn cancelled_before_start() -> Failure {
    Failure::new(
        FailureKind::Cancelled,
        "the dispatch was cancelled before the agent CLI started",
    )
}

/// The run loop: parse stdout as it arrives, collect stderr, watch the direct child's exit and
/// the cancel token. Returns once the whole tree is gone and the pipes are drained (or the
/// drain bound passed).
async fn supervise_run(
    mut run: crate::supervise::SupervisedChild,
    parser: &mut dyn StreamParser,
    cancel: &CancellationToken,
    sink: &mut (dyn FnMut(StreamEvent) + Send),
) -> (Observed, String) {
    let group = run.group.clone();
    let _guard = crate::supervise::KillOnDrop(group.clone());
    let mut observed = Observed::default();
    let mut stdout = run
        .stdout
        .take()
        .map(|s| FramedRead::new(s, framing::stdout_codec()));
    let mut stdout_open = stdout.is_some();

    // stderr is read on its own task into a bounded tail; complete lines come back here so the
    // parser (owned by this loop) can look at them.
    let (line_tx, mut line_rx) = mpsc::channel::<String>(64);
    let tail = Arc::new(Mutex::new(StderrTail::default()));
    let stderr_task = tokio::spawn(read_stderr(run.stderr.take(), tail.clone(), line_tx));
    let mut stderr_open = true;

    let mut cleanup = pin!(async { group.terminate().await });
    let mut stopping = false; // cleanup started
    let mut stopped = false; // cleanup finished
    let mut drain_deadline: Option<tokio::time::Instant> = None;

    loop {
        if stopped && !stdout_open && !stderr_open {
            break;
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled(), if !stopping => {
                observed.cancelled = group.exit_status().is_none();
                stopping = true;
            }
            _ = group.exited(), if !stopping => {
                // The direct CLI is gone: whatever it left behind is cleaned up now.
                stopping = true;
            }
            _ = &mut cleanup, if stopping && !stopped => {
                stopped = true;
                drain_deadline = Some(tokio::time::Instant::now() + DRAIN_AFTER_CLEANUP);
            }
            _ = async { tokio::time::sleep_until(drain_deadline.unwrap()).await }, if drain_deadline.is_some() => {
                break;
            }
            line = async { stdout.as_mut().unwrap().next().await }, if stdout_open => match line {
                Some(Ok(line)) => {
                    if observed.parse_failure.is_some() {
                        continue; // already failed: drain without parsing
                    }
                    let parsed = framing::check_line(&line)
                        .and_then(|()| parser.parse_line(&line).map_err(|e| e.0));
                    match parsed {
                        Ok(events) => events.into_iter().for_each(&mut *sink),
                        Err(why) => {
                            observed.parse_failure = Some(why);
                            stopping = true;
                        }
                    }
                }
                Some(Err(e)) => {
                    if observed.parse_failure.is_none() {
                        observed.parse_failure = Some(framing::framing_error(&e));
                    }
                    stopping = true;
                    stdout_open = false;
                }
                None => stdout_open = false,
            },
            line = line_rx.recv(), if stderr_open => match line {
                Some(line) => {
                    if !line.trim().is_empty() {
                        observed.stderr_last_line = Some(line.trim().to_owned());
                    }
                    if let Some(ev) = parser.stderr_line(&line) {
                        sink(ev);
                    }
                }
                None => stderr_open = false,
            },
        }
    }
    if !stopped {
        // Drain bound hit before cleanup finished can't happen (the deadline is set after it),
        // but keep the invariant explicit: the tree is always cleaned before we return.
        cleanup.await;
    }
    observed.exit = group.exit_status();
    stderr_task.abort();
    let text = tail.lock().unwrap().text();
    (observed, text)
}

async fn read_stderr(
    stderr: Option<tokio::process::ChildStderr>,
    tail: Arc<Mutex<StderrTail>>,
    lines: mpsc::Sender<String>,
) {
    if let Some(mut stderr) = stderr {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let finished = tail.lock().unwrap().push(&buf[..n]);
                    for line in finished {
                        // A full channel means the loop is busy; drop lines rather than block
                        // the stderr pipe (the tail keeps the bytes either way).
                        let _ = lines.try_send(line);
                    }
                }
            }
        }
        let last = tail.lock().unwrap().finish();
        if let Some(line) = last {
            let _ = lines.try_send(line);
        }
    }
}
