//! A scripted fake of the OpenAI Responses API (`POST /v1/responses`, SSE), enough to drive the
//! real `codex exec` (0.171.0) offline through a custom provider.
//!
//! The model's turn is a [`Script`] of [`Step`]s. Each request's step is chosen from how many
//! tool results the request carries (`function_call_output` and `custom_tool_call_output` items in
//! `input`): the first request gets step 0, the request that returns its result gets step 1, and
//! so on. A retried request carries the same results, so it gets the same step again. Past the
//! end of the script the model answers with a short final message.
//!
//! Every request is logged ([`FakeResponses::requests`]); the tool results the CLI sent back
//! ([`FakeResponses::tool_outputs`]) are the evidence of what a command really did — a denied
//! write shows up there as `Read-only file system`.
//!
//! Codex 0.171.0 offers the shell as the function tool `exec_command` (`{"cmd": …}`) and the
//! patch tool as the freeform custom tool `apply_patch` (the patch text is the call's `input`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::loopback::ModelEndpoint;
use crate::loopback::{LoggedRequest, LoopbackServer, RequestLog};

/// The shell tool codex 0.171.0 offers (unified exec).
pub const SHELL_TOOL: &str = "exec_command";
/// The (freeform) patch tool codex 0.171.0 offers.
pub const PATCH_TOOL: &str = "apply_patch";
/// The final answer given once the script has run out of steps.
pub const SCRIPT_DONE_TEXT: &str = "FAKE_DONE (script finished)";

/// The `call_id` of the tool call made at script step `step` (how tool results are matched to
/// their steps).
pub fn call_id(step: usize) -> String {
    format!("call_step{step}")
}

/// One model response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Call the shell tool with this command line.
    Shell { cmd: String },
    /// Call the patch tool with this patch (`*** Begin Patch` … `*** End Patch`).
    ApplyPatch { patch: String },
    /// Call another freeform tool codex offers with this input (for example `exec`, whose
    /// JavaScript reaches an MCP server's tools as `tools.mcp__<server>__<tool>(…)`).
    Custom { name: String, input: String },
    /// Answer with a final assistant message (ends the turn).
    Message { text: String },
    /// Stream `response.failed` with this error message (codex retries, then fails the turn).
    ResponseFailed { message: String },
    /// Answer with this HTTP status and an OpenAI-style JSON error body.
    HttpError { status: u16, message: String },
}

impl Step {
    pub fn shell(cmd: impl Into<String>) -> Self {
        Step::Shell { cmd: cmd.into() }
    }

    pub fn apply_patch(patch: impl Into<String>) -> Self {
        Step::ApplyPatch {
            patch: patch.into(),
        }
    }

    /// A patch that adds one file with one line.
    pub fn add_file(path: &str, line: &str) -> Self {
        Step::apply_patch(format!(
            "*** Begin Patch\n*** Add File: {path}\n+{line}\n*** End Patch\n"
        ))
    }

    pub fn custom(name: impl Into<String>, input: impl Into<String>) -> Self {
        Step::Custom {
            name: name.into(),
            input: input.into(),
        }
    }

    pub fn message(text: impl Into<String>) -> Self {
        Step::Message { text: text.into() }
    }

    pub fn response_failed(message: impl Into<String>) -> Self {
        Step::ResponseFailed {
            message: message.into(),
        }
    }

    pub fn http_error(status: u16, message: impl Into<String>) -> Self {
        Step::HttpError {
            status,
            message: message.into(),
        }
    }
}

/// Token usage reported in every successful response's `response.completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenUsage {
    /// All input tokens (cached and cache-written included, as the API counts them).
    pub input: u64,
    pub cached: u64,
    pub cache_write: u64,
    /// All output tokens (reasoning included).
    pub output: u64,
    pub reasoning: u64,
}

impl TokenUsage {
    fn to_json(self) -> Value {
        json!({
            "input_tokens": self.input,
            "input_tokens_details": {"cached_tokens": self.cached, "cache_write_tokens": self.cache_write},
            "output_tokens": self.output,
            "output_tokens_details": {"reasoning_tokens": self.reasoning},
            "total_tokens": self.input + self.output,
        })
    }
}

/// The scripted turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub steps: Vec<Step>,
    pub usage: TokenUsage,
}

impl Script {
    pub fn new(steps: Vec<Step>) -> Self {
        Self {
            steps,
            usage: TokenUsage {
                input: 100,
                cached: 10,
                cache_write: 4,
                output: 20,
                reasoning: 5,
            },
        }
    }

    pub fn with_usage(mut self, usage: TokenUsage) -> Self {
        self.usage = usage;
        self
    }
}

/// A tool result the CLI sent back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub call_id: String,
    /// `function_call_output` or `custom_tool_call_output`.
    pub kind: String,
    pub output: String,
}

struct Shared {
    script: Script,
    log: RequestLog,
    served: AtomicUsize,
}

/// A running fake Responses endpoint on 127.0.0.1 (random port). Dropping it stops it.
pub struct FakeResponses {
    server: LoopbackServer,
    api_key: String,
}

impl FakeResponses {
    pub async fn start(script: Script) -> std::io::Result<Self> {
        let log = RequestLog::default();
        let shared = Arc::new(Shared {
            script,
            log: log.clone(),
            served: AtomicUsize::new(0),
        });
        let router = axum::Router::new()
            .fallback(handle)
            .layer(DefaultBodyLimit::max(256 * 1024 * 1024))
            .with_state(shared);
        let server = LoopbackServer::start(router, log).await?;
        let api_key = format!("sk-agent-dispatch-loopback-{}", server.addr.port());
        Ok(Self { server, api_key })
    }

    /// `http://127.0.0.1:PORT/v1`, the provider base URL codex expects.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.base_url())
    }

    /// The endpoint and throw-away key to hand to an adapter.
    pub fn endpoint(&self) -> ModelEndpoint {
        ModelEndpoint {
            base_url: self.base_url(),
            api_key: self.api_key.clone(),
        }
    }

    pub fn api_key(&self) -> &str {
        &self.api_key
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.server.log.all()
    }

    /// The model requests (`POST …/responses`), in order.
    pub fn model_requests(&self) -> Vec<LoggedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/responses"))
            .collect()
    }

    /// The tool results the CLI sent back, from the request that carried the most of them.
    pub fn tool_outputs(&self) -> Vec<ToolOutput> {
        self.model_requests()
            .iter()
            .map(|r| tool_outputs(&r.body))
            .max_by_key(Vec::len)
            .unwrap_or_default()
    }
}

/// The tool results in one request body's `input`.
pub fn tool_outputs(body: &Value) -> Vec<ToolOutput> {
    let Some(input) = body.get("input").and_then(Value::as_array) else {
        return Vec::new();
    };
    input
        .iter()
        .filter_map(|item| {
            let kind = item.get("type")?.as_str()?;
            if kind != "function_call_output" && kind != "custom_tool_call_output" {
                return None;
            }
            Some(ToolOutput {
                call_id: item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                kind: kind.to_owned(),
                output: output_text(item.get("output")),
            })
        })
        .collect()
}

/// A tool output is a string, or a list of content items with `text`.
fn output_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        Some(Value::Object(o)) => o
            .get("content")
            .map(|c| output_text(Some(c)))
            .unwrap_or_default(),
        _ => String::new(),
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .filter(|e| !e.eq_ignore_ascii_case("identity"));
    let json_body: Value = match encoding {
        Some(enc) => json!({"_undecodable": format!("{enc}-encoded body, {} bytes", body.len())}),
        None if body.is_empty() => Value::Null,
        None => serde_json::from_slice(&body).unwrap_or_else(
            |_| json!({"_raw": String::from_utf8_lossy(&body[..body.len().min(2000)])}),
        ),
    };
    let auth = headers
        .get(header::AUTHORIZATION)
        .or_else(|| headers.get("x-api-key"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    shared.log.push(LoggedRequest {
        method: method.to_string(),
        path: path.clone(),
        auth,
        body: json_body.clone(),
    });

    if method == Method::GET && path.ends_with("/models") {
        return axum::Json(json!({"object": "list", "data": []})).into_response();
    }
    if method != Method::POST || !path.ends_with("/responses") {
        return error_response(
            StatusCode::NOT_FOUND,
            &format!("no route for {method} {path}"),
        );
    }

    let step_no = tool_outputs(&json_body).len();
    let request_no = shared.served.fetch_add(1, Ordering::Relaxed) + 1;
    let step = shared
        .script
        .steps
        .get(step_no)
        .cloned()
        .unwrap_or_else(|| Step::message(SCRIPT_DONE_TEXT));
    let resp_id = format!("resp_fake_{request_no}");
    let call_id = call_id(step_no);
    let mut events = vec![json!({"type": "response.created", "response": {"id": resp_id}})];
    let completed = json!({"type": "response.completed", "response": {"id": resp_id, "usage": shared.script.usage.to_json()}});
    match step {
        Step::HttpError { status, message } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return error_response(status, &message);
        }
        Step::ResponseFailed { message } => {
            events.push(json!({"type": "response.failed", "response": {
                "id": resp_id, "error": {"code": "server_error", "message": message}}}));
        }
        Step::Shell { cmd } => {
            let item = json!({"type": "function_call", "id": format!("fc_step{step_no}"),
                "call_id": call_id, "name": SHELL_TOOL,
                "arguments": json!({"cmd": cmd}).to_string(), "status": "completed"});
            push_item(&mut events, item);
            events.push(completed);
        }
        Step::Custom { name, input } => {
            let item = json!({"type": "custom_tool_call", "id": format!("ctc_step{step_no}"),
                "call_id": call_id, "name": name, "input": input, "status": "completed"});
            push_item(&mut events, item);
            events.push(completed);
        }
        Step::ApplyPatch { patch } => {
            let item = json!({"type": "custom_tool_call", "id": format!("ctc_step{step_no}"),
                "call_id": call_id, "name": PATCH_TOOL, "input": patch, "status": "completed"});
            push_item(&mut events, item);
            events.push(completed);
        }
        Step::Message { text } => {
            let msg_id = format!("msg_step{step_no}");
            events.push(json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "message", "id": msg_id, "role": "assistant", "content": [], "status": "in_progress"}}));
            events.push(
                json!({"type": "response.output_text.delta", "item_id": msg_id,
                "output_index": 0, "content_index": 0, "delta": text}),
            );
            events.push(json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"type": "message", "id": msg_id, "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}}));
            events.push(completed);
        }
    }
    let mut sse = String::new();
    for ev in &events {
        let kind = ev["type"].as_str().unwrap_or("message");
        sse.push_str(&format!("event: {kind}\ndata: {ev}\n\n"));
    }
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        sse,
    )
        .into_response()
}

fn push_item(events: &mut Vec<Value>, item: Value) {
    let mut added = item.clone();
    added["status"] = json!("in_progress");
    events.push(json!({"type": "response.output_item.added", "output_index": 0, "item": added}));
    events.push(json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
}

fn error_response(status: StatusCode, message: &str) -> Response {
    let (kind, code) = if status.is_server_error() {
        ("server_error", "server_error")
    } else {
        ("invalid_request_error", "invalid_request")
    };
    (
        status,
        axum::Json(json!({"error": {"message": message, "type": kind, "code": code}})),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_outputs_are_read_from_input() {
        let body = json!({"input": [
            {"type": "message", "role": "user", "content": []},
            {"type": "function_call", "call_id": "a"},
            {"type": "function_call_output", "call_id": "a", "output": "Read-only file system"},
            {"type": "custom_tool_call_output", "call_id": "b", "output": [{"type": "input_text", "text": "x"}, {"text": "y"}]},
        ]});
        let outs = tool_outputs(&body);
        assert_eq!(outs.len(), 2);
        assert_eq!(outs[0].output, "Read-only file system");
        assert_eq!(outs[1].kind, "custom_tool_call_output");
        assert_eq!(outs[1].output, "xy");
        assert!(tool_outputs(&json!({})).is_empty());
    }

    #[test]
    fn usage_json_has_the_api_shape() {
        let u = TokenUsage {
            input: 10,
            cached: 3,
            cache_write: 2,
            output: 4,
            reasoning: 1,
        }
        .to_json();
        assert_eq!(u["input_tokens_details"]["cached_tokens"], 3);
        assert_eq!(u["input_tokens_details"]["cache_write_tokens"], 2);
        assert_eq!(u["output_tokens_details"]["reasoning_tokens"], 1);
        assert_eq!(u["total_tokens"], 14);
    }
}
