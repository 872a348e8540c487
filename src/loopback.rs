//! A loopback HTTP server for fake model endpoints: binds 127.0.0.1 on port 0 (never a fixed
//! port), logs every request body it was sent, and stops when dropped.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, Method};
use tokio::task::JoinHandle;

/// A loopback model endpoint swapped in for the real one (tests and `agent-dispatch check`).
/// Only the endpoint and a throw-away credential change; the launch configuration does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelEndpoint {
    /// Base URL as the CLI expects it (for example `http://127.0.0.1:PORT/v1` for Codex).
    pub base_url: String,
    /// A throw-away credential the fake endpoint accepts.
    pub api_key: String,
}

/// Every request the fake endpoint received, in order: method, path and the JSON body.
#[derive(Debug, Clone, Default)]
pub struct RequestLog(Arc<Mutex<Vec<LoggedRequest>>>);

#[derive(Debug, Clone)]
pub struct LoggedRequest {
    pub method: String,
    pub path: String,
    /// The `Authorization` / `x-api-key` header value, if any.
    pub auth: Option<String>,
    pub body: serde_json::Value,
}

impl RequestLog {
    pub fn push(&self, r: LoggedRequest) {
        self.0.lock().unwrap().push(r);
    }

    /// Log one request as a fake endpoint received it and return its body as JSON (`null` when
    /// it is not JSON). The credential is the first of `auth_headers` the request carries.
    pub fn record(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
        auth_headers: &[&str],
        body: &[u8],
    ) -> serde_json::Value {
        let body: serde_json::Value =
            serde_json::from_slice(body).unwrap_or(serde_json::Value::Null);
        let auth = auth_headers
            .iter()
            .find_map(|h| headers.get(*h))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.push(LoggedRequest {
            method: method.to_string(),
            path: path.to_owned(),
            auth,
            body: body.clone(),
        });
        body
    }
    pub fn all(&self) -> Vec<LoggedRequest> {
        self.0.lock().unwrap().clone()
    }
}

/// A running loopback server. Dropping it stops the server.
pub struct LoopbackServer {
    pub addr: SocketAddr,
    pub log: RequestLog,
    task: JoinHandle<()>,
}

impl LoopbackServer {
    /// Serve `router` on 127.0.0.1:0.
    pub async fn start(router: axum::Router, log: RequestLog) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok(Self { addr, log, task })
    }

    /// Serve `handler` for every route, with `state`, on 127.0.0.1:0. Request bodies have no
    /// size limit: a CLI re-sends the whole conversation every turn.
    pub async fn serve<H, T, S>(handler: H, state: S, log: RequestLog) -> std::io::Result<Self>
    where
        H: axum::handler::Handler<T, S>,
        T: 'static,
        S: Clone + Send + Sync + 'static,
    {
        let router = axum::Router::new()
            .fallback(handler)
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(state);
        Self::start(router, log).await
    }

    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
