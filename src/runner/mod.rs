//! The runner (D11): validate, pre-validate, spawn under supervision, frame stdout into bounded
//! lines, parse, classify the outcome.

use tokio_util::sync::CancellationToken;

use crate::adapter::{Env, ModelEndpoint};
use crate::contract::{DispatchRequest, DispatchResult, StreamEvent};
use crate::supervise::Supervisor;

/// Per-dispatch options that are not part of the request.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The caller's environment (the child's is an allowlisted subset of it).
    pub parent_env: Env,
    /// A loopback model endpoint to use instead of the real one (tests, self-check).
    pub endpoint: Option<ModelEndpoint>,
}

/// Run one dispatch to its single final result. Events are handed to `sink` as they arrive.
pub async fn dispatch(
    _req: &DispatchRequest,
    _opts: &RunOptions,
    _supervisor: &Supervisor,
    _cancel: CancellationToken,
    _sink: &mut (dyn FnMut(StreamEvent) + Send),
) -> DispatchResult {
    todo!()
}
