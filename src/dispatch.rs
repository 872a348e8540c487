//! The dispatch service: the one path every face takes (the CLI's `run`, the Pi extension
//! through it, the MCP server, background jobs).
//!
//! validate → find the CLI → read-only gate (a passing check on record, else run the check
//! first; or the deliberate bypass) → [`runner::run`], all inside the dispatch's limits
//! ([`crate::limits`]: time and tokens). The runner knows nothing of the gate, and
//! the check calls the runner directly, so there is no recursion between them.

use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::adapter::Env;
use crate::contract::{
    DispatchRequest, DispatchResult, Failure, FailureKind, Identity, NoticeLevel, StreamEvent,
};
use crate::limits::{Enforcer, Limits};
use crate::loopback::ModelEndpoint;
use crate::readonly::gate::{self, GatePolicy};
use crate::request::{self, ValidRequest};
use crate::runner;
use crate::supervise::Supervisor;

/// Per-dispatch options that are not part of the request.
#[derive(Debug, Clone, Default)]
pub struct DispatchOptions {
    /// The caller's environment (the child's is an allowlisted subset of it).
    pub parent_env: Env,
    /// A loopback model endpoint to use instead of the real one (tests).
    pub endpoint: Option<ModelEndpoint>,
    /// Whether a passing read-only check must be on record before the CLI runs.
    pub gate: GatePolicy,
    /// Time and token limits (default: none; faces resolve the user's with [`Limits::from_env`]).
    pub limits: Limits,
}

/// Validate, then dispatch. Events go to `sink` as they arrive; exactly one result comes back.
pub async fn dispatch(
    req: &DispatchRequest,
    opts: &DispatchOptions,
    supervisor: &Supervisor,
    cancel: CancellationToken,
    sink: &mut (dyn FnMut(StreamEvent) + Send),
) -> DispatchResult {
    match request::validate(req) {
        Ok(valid) => dispatch_valid(&valid, opts, supervisor, cancel, sink).await,
        Err(f) => DispatchResult::early_failure(
            Identity::requested(&req.agent, req.model.as_deref(), req.effort.as_deref()),
            f,
        ),
    }
}

/// Dispatch a validated request (faces that print the request before it runs validate first).
pub async fn dispatch_valid(
    req: &ValidRequest,
    opts: &DispatchOptions,
    supervisor: &Supervisor,
    cancel: CancellationToken,
    sink: &mut (dyn FnMut(StreamEvent) + Send),
) -> DispatchResult {
    let started = Instant::now();
    let bypassed = opts.gate == GatePolicy::Bypass;
    // The limits are a layer around the whole dispatch (the check included): the run gets a
    // child token that a limit cancels, and the result names the limit.
    let enforcer = Enforcer::new(opts.limits, &cancel);
    let mut limited = enforcer.sink(sink);
    let run = unlimited(req, opts, supervisor, enforcer.token(), &mut limited);
    let mut result = enforcer.run(run).await;
    result.duration_ms = started.elapsed().as_millis() as u64;
    result.check_bypassed = bypassed;
    result
}

/// Gate, then run: one result.
async fn unlimited(
    req: &ValidRequest,
    opts: &DispatchOptions,
    supervisor: &Supervisor,
    cancel: CancellationToken,
    sink: &mut (dyn FnMut(StreamEvent) + Send),
) -> DispatchResult {
    match gated(req, opts, supervisor, cancel.clone(), sink).await {
        Ok(program) => {
            runner::run(
                req,
                &program,
                &opts.parent_env,
                opts.endpoint.as_ref(),
                supervisor,
                cancel,
                sink,
            )
            .await
        }
        Err(f) => DispatchResult::early_failure(req.identity(), f),
    }
}

/// Everything before the runner: the CLI must be able to run read-only, be installed, and have
/// passed the check with this configuration (or the caller bypassed the gate on purpose).
async fn gated(
    req: &ValidRequest,
    opts: &DispatchOptions,
    supervisor: &Supervisor,
    cancel: CancellationToken,
    sink: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<std::path::PathBuf, Failure> {
    let adapter = req.adapter;
    if !adapter.capabilities().read_only_enforced {
        return Err(Failure::new(
            FailureKind::ReadOnlyUnavailable,
            format!(
                "{} cannot be run read-only by this build; refusing to run it unsandboxed",
                adapter.display_name()
            ),
        ));
    }
    let program = crate::program::resolve_program(adapter, &opts.parent_env)?;
    match opts.gate {
        GatePolicy::Enforce => {
            tokio::select! {
                r = gate::ensure_checked(
                    adapter, &program, &opts.parent_env, supervisor, cancel.clone(), sink,
                ) => r?,
                _ = cancel.cancelled() => return Err(runner::cancelled_before_start()),
            }
        }
        GatePolicy::Bypass => sink(StreamEvent::Notice {
            level: NoticeLevel::Warning,
            message: format!(
                "The read-only check was deliberately skipped ({}); this run is not proven read-only on this machine.",
                gate::SKIP_CHECK_VAR
            ),
        }),
    }
    Ok(program)
}
