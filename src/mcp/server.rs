//! The MCP request handler: lists the tools and runs them. `dispatch` goes through the one
//! dispatch service, exactly as `agent-dispatch run` does (validation, the read-only gate from
//! the environment, supervision); only the way events and the result travel differs.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::progress::Reporter;
use super::{result, roots, tools};
use crate::adapter::Env;
use crate::contract::{DispatchRequest, DispatchResult, Failure, FailureKind, Identity};
use crate::dispatch::{self, DispatchOptions};
use crate::inventory;
use crate::limits::{self, Limits};
use crate::readonly::gate;
use crate::supervise::Supervisor;

/// The newest protocol revision this server implements; older ones with an `initialize`
/// handshake are accepted as the client asks.
pub const NEWEST_PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The `dispatch` tool's arguments, as its input schema describes them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DispatchArgs {
    agent: String,
    task: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    effort: Option<String>,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    timeout: Option<String>,
    #[serde(default, rename = "maxTokens")]
    max_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelsArgs {
    agent: String,
}

/// The server: one per connection. Clones share the supervisor, so shutting the server down
/// stops every dispatch any call started.
#[derive(Clone)]
pub struct DispatchServer {
    inner: Arc<Inner>,
}

struct Inner {
    supervisor: Supervisor,
    parent_env: Env,
    /// Where a `cwd`-less dispatch runs, and what a relative `cwd` is relative to.
    cwd: PathBuf,
    tools: Vec<Tool>,
}

impl DispatchServer {
    pub fn new(supervisor: Supervisor, parent_env: Env, cwd: PathBuf) -> Self {
        Self {
            inner: Arc::new(Inner {
                supervisor,
                parent_env,
                cwd,
                tools: tools::all(),
            }),
        }
    }

    async fn dispatch(
        &self,
        args: serde_json::Map<String, serde_json::Value>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let (req, limits) = match self.request(args) {
            Ok(r) => r,
            Err(refusal) => return refusal,
        };
        let identity = Identity::requested(&req.agent, req.model.as_deref(), req.effort.as_deref());
        if let Err(f) = within_roots(&req.cwd, &ctx).await {
            return refused(identity, f);
        }
        let gate = match gate::policy_from_env(&self.inner.parent_env) {
            Ok(g) => g,
            Err(f) => return refused(identity, f),
        };
        let limits = match limits {
            Ok(l) => l,
            Err(f) => return refused(identity, f),
        };
        let opts = DispatchOptions {
            parent_env: self.inner.parent_env.clone(),
            endpoint: None,
            gate,
            limits,
        };
        let cancel: CancellationToken = ctx.ct.clone();
        let token = ctx.meta.get_progress_token();
        let reporter = Reporter::start(ctx.peer.clone(), token, cancel.clone(), &req.agent);
        let outcome = {
            let mut sink = |ev| reporter.event(&ev);
            dispatch::dispatch(&req, &opts, &self.inner.supervisor, cancel, &mut sink).await
        };
        reporter.finish().await;
        result::dispatch(outcome)
    }

    /// The request the arguments describe (`cwd` defaults to, and is relative to, the
    /// server's) and its limits: the call's, else the environment's, else the defaults.
    fn request(
        &self,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> Result<(DispatchRequest, Result<Limits, Failure>), CallToolResult> {
        let agent = args
            .get("agent")
            .and_then(|a| a.as_str())
            .unwrap_or_default()
            .to_owned();
        let args: DispatchArgs = serde_json::from_value(args.into()).map_err(|e| {
            refused(
                Identity::requested(&agent, None, None),
                Failure::new(
                    FailureKind::InvalidRequest,
                    format!("the dispatch arguments do not match the tool's schema: {e}"),
                ),
            )
        })?;
        let cwd = match args.cwd {
            Some(c) => self.inner.cwd.join(c),
            None => self.inner.cwd.clone(),
        };
        let limits =
            Limits::from_env(None, args.max_tokens, &self.inner.parent_env).and_then(|mut l| {
                if let Some(t) = &args.timeout {
                    l.timeout = limits::parse_timeout(t, "timeout")?;
                }
                Ok(l)
            });
        let req = DispatchRequest {
            agent: args.agent,
            task: args.task,
            scope: args.scope,
            model: args.model,
            effort: args.effort,
            cwd,
        };
        Ok((req, limits))
    }

    async fn models(
        &self,
        args: serde_json::Map<String, serde_json::Value>,
        cancel: CancellationToken,
    ) -> CallToolResult {
        let args: ModelsArgs = match serde_json::from_value(args.into()) {
            Ok(a) => a,
            Err(e) => {
                return result::error(format!(
                    "invalid-request: the models arguments do not match the tool's schema: {e}"
                ));
            }
        };
        // Cancelling the call stops the catalogue's subprocess too.
        let supervisor = self.inner.supervisor.with_cancel(cancel);
        let found = inventory::models(&args.agent, &self.inner.parent_env, &supervisor).await;
        match found {
            Ok(catalogue) => result::listing(&catalogue),
            Err(e) => result::error(e.to_string()),
        }
    }

    async fn agents(&self, cancel: CancellationToken) -> CallToolResult {
        let supervisor = self.inner.supervisor.with_cancel(cancel);
        let infos = inventory::agents(&self.inner.parent_env, &supervisor).await;
        result::listing(&serde_json::json!({ "agents": infos }))
    }
}

/// Refuse a `cwd` outside every root the client declared (when it declares any).
async fn within_roots(
    cwd: &std::path::Path,
    ctx: &RequestContext<RoleServer>,
) -> Result<(), Failure> {
    match roots::declared(&ctx.peer, &ctx.ct).await? {
        Some(dirs) => roots::check(cwd, &dirs),
        None => Ok(()),
    }
}

/// A dispatch refused before anything started: the same typed result `run` would print.
fn refused(identity: Identity, failure: Failure) -> CallToolResult {
    result::dispatch(DispatchResult::early_failure(identity, failure))
}

impl ServerHandler for DispatchServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(NEWEST_PROTOCOL)
            .with_server_info(
                Implementation::new("agent-dispatch", env!("CARGO_PKG_VERSION"))
                    .with_title("agent-dispatch"),
            )
            .with_instructions(tools::instructions())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&NEWEST_PROTOCOL))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            tools::DISPATCH => self.dispatch(args, context).await,
            tools::AGENTS => self.agents(context.ct).await,
            tools::MODELS => self.models(args, context.ct).await,
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool {other:?}; this server has dispatch, agents and models"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}
