//! `agent-dispatch mcp`: the dispatch service as an MCP server on stdio, for every MCP host
//! (Claude Code, Codex, Cursor, VS Code, Zed…). Built on the official SDK, `rmcp`.
//!
//! Tools come from the adapter registry ([`tools`]); a call runs through the same dispatch
//! service as `agent-dispatch run` ([`server`]); events become coalesced progress notifications
//! ([`progress`]); the result is text plus the protocol's `result` object ([`result`]).
//!
//! Lifetime: `notifications/cancelled` cancels that call's dispatch (its request token);
//! end-of-file on stdin, SIGTERM, SIGINT or SIGHUP cancel every running dispatch, and the
//! server exits once their trees are gone. Only protocol messages are written to stdout.

mod progress;
mod result;
mod roots;
mod server;
mod stdio;
mod tools;

pub use server::{DispatchServer, NEWEST_PROTOCOL};

use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;
use tokio_util::sync::CancellationToken;

use crate::env;
use crate::supervise::{Supervisor, unix};

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot read the working directory: {0}")]
    Cwd(std::io::Error),
    #[error("the MCP handshake failed: {0}")]
    Handshake(Box<ServerInitializeError>),
    #[error("the MCP service stopped abnormally: {0}")]
    Service(#[from] tokio::task::JoinError),
}

/// Serve MCP on stdin/stdout until the client goes away or a signal asks us to stop.
pub async fn serve() -> Result<(), ServeError> {
    // As `run` does: orphaned descendants re-parent to us so cleanup finds them, and an
    // abrupt death of the host reaches us as SIGTERM.
    unix::become_subreaper();
    unix::terminate_with_parent();

    let shutdown = CancellationToken::new();
    let supervisor = Supervisor::new();
    let cwd = std::env::current_dir().map_err(ServeError::Cwd)?;
    let server = DispatchServer::new(supervisor.clone(), env::current(), cwd);
    let stdin = stdio::EofSignal::new(tokio::io::stdin(), shutdown.clone());
    let signals = tokio::spawn(cancel_on_signal(shutdown.clone()));

    let outcome = match server
        .serve_with_ct((stdin, tokio::io::stdout()), shutdown.clone())
        .await
    {
        Ok(running) => running
            .waiting()
            .await
            .map(|_| ())
            .map_err(ServeError::from),
        // The client left (or we were told to stop) before the handshake finished.
        Err(ServerInitializeError::ConnectionClosed(_) | ServerInitializeError::Cancelled) => {
            Ok(())
        }
        Err(e) => Err(ServeError::Handshake(Box::new(e))),
    };
    shutdown.cancel();
    signals.abort();
    // Whatever a call left running (a dispatch whose reply was still being drained) goes now.
    supervisor.shutdown().await;
    outcome
}

/// Stop serving on SIGTERM, SIGINT or SIGHUP.
async fn cancel_on_signal(shutdown: CancellationToken) {
    crate::supervise::lifeline::stop_requested().await;
    shutdown.cancel();
}
