//! A real MCP client (rmcp's) against the built `agent-dispatch mcp`, as a host meets it: the
//! server is our child on a pipe pair, so a test can close its stdin, signal it and wait for it.
#![allow(dead_code)]
#![allow(deprecated)] // roots: deprecated from protocol 2026-07-28, current in the revisions tested

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, ErrorData, Implementation, ListRootsResult, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, Root, RootsCapabilities, ServerResult,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RequestHandle, RunningService,
};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::process::{Child, Command};
use tokio::sync::Notify;

pub const SKIP: (&str, &str) = ("AGENT_DISPATCH_SKIP_CHECK", "yes-skip-the-read-only-check");

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The engine tests' support (run directories, /proc scans, test homes), loaded here so that
/// the benchmark, which includes this file, has it too.
#[path = "../support/mod.rs"]
pub mod support;

/// An empty CODEX_HOME outside the temp dir and the clone (Codex's sandbox breaks under /tmp):
/// no user config.
pub fn codex_home() -> PathBuf {
    support::homes::shared_home("mcp-test-codex-home")
}

/// `agent-dispatch mcp` with the fake CLIs first on PATH and the read-only check bypassed, as
/// the engine tests run it. Pipes on stdin/stdout; stderr is the test's.
pub fn server_command(cwd: &Path) -> Command {
    server_command_with(cwd, &repo_root().join("tests/fake-cli"))
}

/// [`server_command`] with the fake CLIs of `fakes` first on PATH.
pub fn server_command_with(cwd: &Path, fakes: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agent-dispatch"));
    let path = format!(
        "{}:{}",
        fakes.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    c.arg("mcp")
        .current_dir(cwd)
        .env("PATH", path)
        .env("CODEX_HOME", codex_home())
        .env(SKIP.0, SKIP.1)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    c
}

/// What the test host declares and records.
#[derive(Clone)]
pub struct Host {
    version: ProtocolVersion,
    roots: Option<Vec<PathBuf>>,
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    arrived: Arc<Notify>,
}

impl Host {
    pub fn new(version: ProtocolVersion) -> Self {
        Self {
            version,
            roots: None,
            progress: Arc::default(),
            arrived: Arc::default(),
        }
    }

    /// Declare the roots capability and list these directories.
    pub fn with_roots(mut self, roots: Vec<PathBuf>) -> Self {
        self.roots = Some(roots);
        self
    }

    /// The progress notifications received for `token`, in order.
    pub fn progress(&self, token: &ProgressToken) -> Vec<ProgressNotificationParam> {
        self.progress
            .lock()
            .unwrap()
            .iter()
            .filter(|p| &p.progress_token == token)
            .cloned()
            .collect()
    }

    /// Wait (bounded) for a progress message under `token` that satisfies `pred`.
    pub async fn wait_progress(
        &self,
        token: &ProgressToken,
        what: &str,
        pred: impl Fn(&str) -> bool,
    ) -> ProgressNotificationParam {
        let wait = async {
            loop {
                let arrived = self.arrived.notified();
                if let Some(p) = self
                    .progress(token)
                    .into_iter()
                    .find(|p| pred(p.message.as_deref().unwrap_or("")))
                {
                    return p;
                }
                arrived.await;
            }
        };
        match tokio::time::timeout(Duration::from_secs(30), wait).await {
            Ok(p) => p,
            Err(_) => panic!(
                "no progress {what} within 30 s; got {:?}",
                self.progress(token)
            ),
        }
    }
}

impl ClientHandler for Host {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
        self.arrived.notify_waiters();
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        #[allow(deprecated)]
        let roots = self
            .roots
            .iter()
            .flatten()
            .map(|p| Root::new(format!("file://{}", p.display())))
            .collect();
        Ok(ListRootsResult::new(roots))
    }

    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        if self.roots.is_some() {
            #[allow(deprecated)]
            {
                caps.roots = Some(RootsCapabilities::default());
            }
        }
        ClientConfig::new(caps, Implementation::new("agent-dispatch-test-host", "0"))
            .with_protocol_version(self.version.clone())
    }
}

/// A connected server: the child process and the client session on its pipes.
pub struct Session {
    pub child: Child,
    pub client: RunningService<RoleClient, Host>,
    pub host: Host,
}

impl Session {
    /// Start `agent-dispatch mcp` in `cwd` and complete the handshake.
    pub async fn start(cwd: &Path, host: Host) -> Self {
        Self::start_with(server_command(cwd), host).await
    }

    pub async fn start_with(mut cmd: Command, host: Host) -> Self {
        let mut child = cmd.spawn().expect("start agent-dispatch mcp");
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take().unwrap();
        let client = host
            .clone()
            .serve((stdout, stdin))
            .await
            .expect("MCP handshake");
        Self {
            child,
            client,
            host,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id().expect("server running") as i32
    }

    /// Start a `tools/call` and return its handle (progress token, cancel, await).
    pub async fn start_call(&self, tool: &str, args: Value) -> RequestHandle<RoleClient> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(object(args));
        self.client
            .peer()
            .send_request_with_option(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .expect("send tools/call")
    }

    /// A whole `tools/call`: the tool result and the progress it reported.
    pub async fn call(
        &self,
        tool: &str,
        args: Value,
    ) -> (CallToolResult, Vec<ProgressNotificationParam>) {
        let handle = self.start_call(tool, args).await;
        let token = handle.progress_token.clone();
        let result = finish(handle).await;
        (result, self.host.progress(&token))
    }
}

/// Await a call's tool result (bounded).
pub async fn finish(handle: RequestHandle<RoleClient>) -> CallToolResult {
    let response = tokio::time::timeout(Duration::from_secs(60), handle.await_response())
        .await
        .expect("a tool result within 60 s")
        .expect("a tool result, not a JSON-RPC error");
    match response {
        ServerResult::CallToolResult(r) => r,
        other => panic!("not a tool result: {other:?}"),
    }
}

pub fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

/// The text of a tool result's (single) text block.
pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}
