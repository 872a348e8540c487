//! The runner (D11): run one launch of a validated request — pre-validate, spawn under
//! supervision, frame stdout into bounded lines, parse, classify the outcome into exactly one
//! [`DispatchResult`]. It knows nothing of the read-only gate: [`crate::dispatch`] decides
//! whether a run may start, and `agent-dispatch check` calls [`run`] directly.

pub mod framing;
pub mod outcome;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

use crate::adapter::{Adapter, Env, LaunchContext, StreamParser};
use crate::contract::{
    Confirmed, DispatchResult, Failure, FailureKind, Identity, NoticeLevel, StreamEvent,
};
use crate::loopback::ModelEndpoint;
use crate::request::ValidRequest;
use crate::supervise::Supervisor;
use framing::StderrTail;
use outcome::Observed;

/// After the CLI's tree is gone, how long stdout/stderr may take to reach EOF (a process that
/// escaped the group could still hold a pipe; we do not wait for it forever).
const DRAIN_AFTER_CLEANUP: Duration = Duration::from_millis(500);

/// After the CLI's terminal envelope, how long it may take to exit by itself before its tree
/// is cleaned up. The answer is final at that point: work the agent left running (a Claude
/// background task, which would otherwise start a second turn) must not hold the dispatch.
pub const EXIT_GRACE_AFTER_ANSWER: Duration = Duration::from_secs(2);

/// Run a validated request with the resolved `program` to its single final result. `endpoint`
/// swaps in a loopback model endpoint (tests, the check).
pub async fn run(
    req: &ValidRequest,
    program: &Path,
    parent_env: &Env,
    endpoint: Option<&ModelEndpoint>,
    supervisor: &Supervisor,
    cancel: CancellationToken,
    sink: &mut (dyn FnMut(StreamEvent) + Send),
) -> DispatchResult {
    let started = Instant::now();
    let adapter = req.adapter;
    let identity = Identity::requested(adapter.id(), req.model.as_deref(), req.effort.as_deref());
    let early = |f: Failure| {
        let mut r = DispatchResult::early_failure(identity.clone(), f);
        r.duration_ms = started.elapsed().as_millis() as u64;
        r
    };
    let prompt = crate::prompt::assemble(&req.task, req.scope.as_deref());
    let ctx = LaunchContext {
        program,
        prompt: &prompt,
        model: req.model.as_deref(),
        effort: req.effort.as_deref(),
        cwd: &req.cwd,
        parent_env,
        endpoint,
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
        // A block of zeros (no model request was made) is no usage report.
        usage: outcome
            .usage
            .filter(|u| u.total_tokens() > 0 || u.cost_usd.is_some_and(|c| c > 0.0)),
        identity: Identity {
            confirmed,
            ..identity
        },
        session_id: outcome.session_id,
        failure,
        exit: outcome::exit_info(observed.exit),
        stderr_tail: stderr,
        duration_ms: started.elapsed().as_millis() as u64,
        check_bypassed: false,
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

/// The failure of a dispatch cancelled before its CLI started.
pub fn cancelled_before_start() -> Failure {
    Failure::new(
        FailureKind::Cancelled,
        "the dispatch was cancelled before the agent CLI started",
    )
}

/// Where the run loop is. Phases only move forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The CLI runs; its stdout is parsed as it arrives.
    Running,
    /// The CLI gave its final answer (a terminal envelope) and has until `exit_by` to exit.
    Answered { exit_by: tokio::time::Instant },
    /// The tree is being stopped: the CLI exited, was cancelled, broke its stream, or outstayed
    /// the grace after its answer.
    Stopping,
    /// The tree is gone; stdout and stderr have until `eof_by` to reach EOF.
    Draining { eof_by: tokio::time::Instant },
}

impl Phase {
    fn before_stopping(self) -> bool {
        matches!(self, Phase::Running | Phase::Answered { .. })
    }
}

/// Sleep until a phase's deadline; pending forever when the phase has none.
async fn deadline(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The run loop: parse stdout as it arrives, collect stderr, watch the direct child's exit, the
/// grace after the answer and the cancel token. Returns once the whole tree is gone and the pipes
/// are drained (or the drain bound passed).
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

    let mut cleanup = std::pin::pin!(async { group.terminate().await });
    let mut phase = Phase::Running;

    loop {
        if matches!(phase, Phase::Draining { .. }) && !stdout_open && !stderr_open {
            break;
        }
        let exit_by = match phase {
            Phase::Answered { exit_by } => Some(exit_by),
            _ => None,
        };
        let eof_by = match phase {
            Phase::Draining { eof_by } => Some(eof_by),
            _ => None,
        };
        tokio::select! {
            biased;
            _ = cancel.cancelled(), if phase.before_stopping() => {
                // A cancel after the final answer only hurries the exit along.
                observed.cancelled = phase == Phase::Running && group.exit_status().is_none();
                observed.stopped_after_answer |= matches!(phase, Phase::Answered { .. });
                phase = Phase::Stopping;
            }
            _ = group.exited(), if phase.before_stopping() => {
                // The direct CLI is gone: whatever it left behind is cleaned up now.
                phase = Phase::Stopping;
            }
            _ = deadline(exit_by) => {
                observed.stopped_after_answer = true;
                sink(StreamEvent::Notice {
                    level: NoticeLevel::Info,
                    message: format!(
                        "the agent CLI was still running {} s after its final answer (background work); its process tree was stopped",
                        EXIT_GRACE_AFTER_ANSWER.as_secs()
                    ),
                });
                phase = Phase::Stopping;
            }
            _ = &mut cleanup, if phase == Phase::Stopping => {
                phase = Phase::Draining {
                    eof_by: tokio::time::Instant::now() + DRAIN_AFTER_CLEANUP,
                };
            }
            _ = deadline(eof_by) => break,
            line = async { stdout.as_mut().unwrap().next().await }, if stdout_open => match line {
                Some(Ok(line)) => {
                    if observed.parse_failure.is_some() {
                        continue; // already failed: drain without parsing
                    }
                    let parsed = framing::check_line(&line)
                        .and_then(|()| parser.parse_line(&line).map_err(|e| e.0));
                    match parsed {
                        // The answer is final: what the CLI says after it is not forwarded.
                        Ok(_) if phase != Phase::Running => {}
                        Ok(events) => {
                            let answered = events.iter().any(|e| matches!(e, StreamEvent::Done { .. }));
                            events.into_iter().for_each(&mut *sink);
                            if answered {
                                phase = Phase::Answered {
                                    exit_by: tokio::time::Instant::now() + EXIT_GRACE_AFTER_ANSWER,
                                };
                            }
                        }
                        Err(why) => {
                            observed.parse_failure = Some(why);
                            if phase.before_stopping() {
                                phase = Phase::Stopping;
                            }
                        }
                    }
                }
                Some(Err(e)) => {
                    if observed.parse_failure.is_none() {
                        observed.parse_failure = Some(framing::framing_error(&e));
                    }
                    if phase.before_stopping() {
                        phase = Phase::Stopping;
                    }
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
    if !matches!(phase, Phase::Draining { .. }) {
        // The loop only leaves through the drain bound or with the pipes closed while draining;
        // keep the invariant explicit: the tree is always cleaned before we return.
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
