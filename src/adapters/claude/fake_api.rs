//! A fake Anthropic Messages endpoint for driving the real `claude` CLI offline.
//!
//! It answers `POST /v1/messages` (the CLI adds `?beta=true`) with a server-sent-event stream in
//! the shape the real API uses (`message_start`, `content_block_*`, `message_delta`,
//! `message_stop`), following a typed [`Script`]. The step is chosen by how many `tool_result`
//! blocks the request's conversation already holds: none → step 0, one → step 1, and so on, so
//! the CLI's own retries and re-sends never advance the script. Every request lands in the
//! [`RequestLog`]; [`tool_results`] reads back what the CLI reported for each tool call — the
//! evidence that a write was refused, or that a secret never reached the model.
//!
//! The same script type drives the project's real-CLI tests and `agent-dispatch check`.
//! It binds 127.0.0.1 on an ephemeral port (see [`LoopbackServer`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::events::content_text;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::loopback::{LoggedRequest, LoopbackServer, RequestLog};

/// One assistant turn of the script.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Call the `Bash` tool with this command.
    Bash { command: String },
    /// Call the `Bash` tool with this whole input object (`run_in_background`, `timeout`, …).
    BashInput { input: Value },
    /// Call the `Read` tool on this path (absolute, as the real model would).
    Read { path: String },
    /// Call any other tool the CLI offers (an MCP server's, `mcp__<server>__<tool>`).
    Tool { name: String, input: Value },
    /// Answer with this text and end the conversation.
    Text(String),
    /// Answer this turn with an HTTP error instead of a message.
    Fail(ApiError),
}

/// An HTTP error in the Messages API's shape: `{"type":"error","error":{"type":..,"message":..}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub error_type: String,
    pub message: String,
}

impl ApiError {
    pub fn new(status: u16, error_type: &str, message: &str) -> Self {
        Self {
            status,
            error_type: error_type.to_owned(),
            message: message.to_owned(),
        }
    }

    /// 400 `invalid_request_error`.
    pub fn bad_request(message: &str) -> Self {
        Self::new(400, "invalid_request_error", message)
    }

    /// 404 `not_found_error` for a model name, as the real API answers an unknown model.
    pub fn unknown_model(model: &str) -> Self {
        Self::new(404, "not_found_error", &format!("model: {model}"))
    }

    /// 500 `api_error`.
    pub fn server_error(message: &str) -> Self {
        Self::new(500, "api_error", message)
    }

    /// 529 `overloaded_error`.
    pub fn overloaded() -> Self {
        Self::new(529, "overloaded_error", "Overloaded")
    }
}

/// Token counts the fake reports for every turn: `input`/cache counts in `message_start`,
/// `output` in `message_delta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnUsage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Default for TurnUsage {
    fn default() -> Self {
        Self {
            input: 100,
            output: 20,
            cache_read: 0,
            cache_write: 0,
        }
    }
}

/// Which model names the fake accepts; anything else gets a 404 `not_found_error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelPolicy {
    Any,
    /// Names starting with `claude-` (the real catalogue's shape).
    ClaudeNames,
    Only(Vec<String>),
}

impl ModelPolicy {
    fn accepts(&self, model: &str) -> bool {
        match self {
            ModelPolicy::Any => true,
            ModelPolicy::ClaudeNames => model.starts_with("claude-"),
            ModelPolicy::Only(names) => names.iter().any(|n| n == model),
        }
    }
}

/// What the fake endpoint answers, turn by turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub steps: Vec<Step>,
    /// Every request fails like this, whatever the step (5xx/400 tests).
    pub always_fail: Option<ApiError>,
    pub models: ModelPolicy,
    pub usage: TurnUsage,
    /// Prose sent before each tool call, in the same message (so the CLI emits two `assistant`
    /// events with one message id — what usage de-duplication has to cope with).
    pub narrate: bool,
}

impl Default for Script {
    fn default() -> Self {
        Self::new()
    }
}

impl Script {
    pub fn new() -> Self {
        Self {
            steps: Vec::new(),
            always_fail: None,
            models: ModelPolicy::ClaudeNames,
            usage: TurnUsage::default(),
            narrate: true,
        }
    }

    pub fn bash(mut self, command: impl Into<String>) -> Self {
        self.steps.push(Step::Bash {
            command: command.into(),
        });
        self
    }

    /// A Bash call with extra input fields, e.g. `{"command": "sleep 600",
    /// "run_in_background": true}`.
    pub fn bash_input(mut self, input: Value) -> Self {
        self.steps.push(Step::BashInput { input });
        self
    }

    pub fn read(mut self, path: impl Into<String>) -> Self {
        self.steps.push(Step::Read { path: path.into() });
        self
    }

    pub fn tool(mut self, name: impl Into<String>, input: Value) -> Self {
        self.steps.push(Step::Tool {
            name: name.into(),
            input,
        });
        self
    }

    /// The final answer. A script without one ends with [`DEFAULT_FINAL_TEXT`].
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.steps.push(Step::Text(text.into()));
        self
    }

    /// Fail the turn reached after the previous steps.
    pub fn fail(mut self, error: ApiError) -> Self {
        self.steps.push(Step::Fail(error));
        self
    }

    /// Fail every request.
    pub fn always_fail(mut self, error: ApiError) -> Self {
        self.always_fail = Some(error);
        self
    }

    pub fn models(mut self, models: ModelPolicy) -> Self {
        self.models = models;
        self
    }

    pub fn usage(mut self, usage: TurnUsage) -> Self {
        self.usage = usage;
        self
    }

    /// The step for a conversation that already holds `tool_results` tool results.
    pub fn step_for(&self, tool_results: usize) -> Step {
        self.steps
            .get(tool_results)
            .cloned()
            .unwrap_or_else(|| Step::Text(DEFAULT_FINAL_TEXT.to_owned()))
    }
}

/// The final answer when the script runs out of steps.
pub const DEFAULT_FINAL_TEXT: &str = "FAKE_DONE";

struct Shared {
    script: Script,
    log: RequestLog,
    next_id: AtomicU64,
}

/// A running fake Messages endpoint. Dropping it stops the server.
pub struct FakeMessages {
    pub server: LoopbackServer,
}

impl FakeMessages {
    /// Start serving `script` on 127.0.0.1:0.
    pub async fn start(script: Script) -> std::io::Result<Self> {
        let log = RequestLog::default();
        let shared = Arc::new(Shared {
            script,
            log: log.clone(),
            next_id: AtomicU64::new(1),
        });
        let server = LoopbackServer::serve(handle, shared, log).await?;
        Ok(Self { server })
    }

    /// The base URL for `ANTHROPIC_BASE_URL` (no `/v1`: the CLI appends it).
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    pub fn log(&self) -> &RequestLog {
        &self.server.log
    }

    /// Requests to `/v1/messages`, in order.
    pub fn message_requests(&self) -> Vec<LoggedRequest> {
        self.log()
            .all()
            .into_iter()
            .filter(|r| r.method == "POST" && path_only(&r.path) == "/v1/messages")
            .collect()
    }

    /// Every tool result the CLI sent back, once each, in order.
    pub fn tool_results(&self) -> Vec<ToolResultSeen> {
        tool_results(&self.log().all())
    }
}

/// One `tool_result` block the CLI sent to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResultSeen {
    pub tool_use_id: String,
    pub is_error: bool,
    /// The text the model would have read (string content, or text blocks joined by newlines).
    pub text: String,
}

/// Tool results found in logged request bodies, de-duplicated by `tool_use_id` (every request
/// re-sends the whole conversation), in first-seen order.
pub fn tool_results(requests: &[LoggedRequest]) -> Vec<ToolResultSeen> {
    let mut out: Vec<ToolResultSeen> = Vec::new();
    for r in requests {
        for block in tool_result_blocks(&r.body) {
            let id = block
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if out.iter().any(|t| t.tool_use_id == id) {
                continue;
            }
            out.push(ToolResultSeen {
                tool_use_id: id,
                is_error: block
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                text: content_text(block.get("content")),
            });
        }
    }
    out
}

/// The text of the first user message of a request (the prompt, possibly with other blocks the
/// CLI adds around it).
pub fn first_user_text(body: &Value) -> Option<String> {
    let msg = body
        .get("messages")?
        .as_array()?
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    Some(content_text(msg.get("content")))
}

/// The tool names a request offered the model.
pub fn offered_tools(body: &Value) -> Vec<String> {
    body.get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn tool_result_blocks(body: &Value) -> Vec<&Value> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Vec::new();
    };
    messages
        .iter()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .collect()
}

fn path_only(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| uri.path().to_owned());
    let body = shared.log.record(
        &method,
        &path,
        &headers,
        &["authorization", "x-api-key"],
        &body,
    );

    if method != Method::POST || path_only(&path) != "/v1/messages" {
        return error_response(&ApiError::new(
            404,
            "not_found_error",
            &format!("fake endpoint: no route {method} {path}"),
        ));
    }
    let script = &shared.script;
    if let Some(e) = &script.always_fail {
        return error_response(e);
    }
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if !script.models.accepts(&model) {
        return error_response(&ApiError::unknown_model(&model));
    }

    let offers_bash = offered_tools(&body).iter().any(|t| t == "Bash");
    let step = if offers_bash {
        script.step_for(tool_result_blocks(&body).len())
    } else {
        // A side query (titles, summaries): never part of the script.
        Step::Text("FAKE_SIDE_ANSWER".to_owned())
    };
    let n = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let (blocks, stop) = match step {
        Step::Fail(e) => return error_response(&e),
        Step::Text(t) => (vec![json!({"type": "text", "text": t})], "end_turn"),
        Step::Bash { command } => (
            tool_turn(
                script.narrate,
                n,
                "Bash",
                json!({"command": command, "description": "Scripted command"}),
            ),
            "tool_use",
        ),
        Step::BashInput { input } => (tool_turn(script.narrate, n, "Bash", input), "tool_use"),
        Step::Read { path } => (
            tool_turn(script.narrate, n, "Read", json!({"file_path": path})),
            "tool_use",
        ),
        Step::Tool { name, input } => (tool_turn(script.narrate, n, &name, input), "tool_use"),
    };
    let id = format!("msg_fake_{n:04}");
    let streaming = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    if streaming {
        sse_response(&id, &model, &blocks, stop, script.usage)
    } else {
        let u = script.usage;
        let msg = json!({
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": blocks, "stop_reason": stop, "stop_sequence": null,
            "usage": {
                "input_tokens": u.input, "output_tokens": u.output,
                "cache_read_input_tokens": u.cache_read,
                "cache_creation_input_tokens": u.cache_write,
            },
        });
        (StatusCode::OK, axum::Json(msg)).into_response()
    }
}

fn tool_turn(narrate: bool, n: u64, name: &str, input: Value) -> Vec<Value> {
    let mut blocks = Vec::new();
    if narrate {
        blocks.push(json!({"type": "text", "text": format!("Scripted step: {name}.")}));
    }
    blocks.push(json!({
        "type": "tool_use",
        "id": format!("toolu_fake_{n:04}"),
        "name": name,
        "input": input,
    }));
    blocks
}

fn sse_event(out: &mut String, event: &str, data: Value) {
    out.push_str("event: ");
    out.push_str(event);
    out.push_str("\ndata: ");
    out.push_str(&data.to_string());
    out.push_str("\n\n");
}

fn sse_response(id: &str, model: &str, blocks: &[Value], stop: &str, u: TurnUsage) -> Response {
    let mut out = String::new();
    sse_event(
        &mut out,
        "message_start",
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {
                "input_tokens": u.input, "output_tokens": 1,
                "cache_read_input_tokens": u.cache_read,
                "cache_creation_input_tokens": u.cache_write,
            },
        }}),
    );
    for (i, block) in blocks.iter().enumerate() {
        let (start, delta) = if block["type"] == "text" {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        } else {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        };
        sse_event(
            &mut out,
            "content_block_start",
            json!({"type": "content_block_start", "index": i, "content_block": start}),
        );
        sse_event(
            &mut out,
            "content_block_delta",
            json!({"type": "content_block_delta", "index": i, "delta": delta}),
        );
        sse_event(
            &mut out,
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        );
    }
    sse_event(
        &mut out,
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": u.output}}),
    );
    sse_event(&mut out, "message_stop", json!({"type": "message_stop"}));
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        out,
    )
        .into_response()
}

fn error_response(e: &ApiError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = json!({"type": "error", "error": {"type": e.error_type, "message": e.message}});
    (status, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_follow_the_tool_result_count() {
        let s = Script::new().bash("echo hi").read("/x").text("done");
        assert_eq!(
            s.step_for(0),
            Step::Bash {
                command: "echo hi".into()
            }
        );
        assert_eq!(s.step_for(1), Step::Read { path: "/x".into() });
        assert_eq!(s.step_for(2), Step::Text("done".into()));
        assert_eq!(s.step_for(9), Step::Text(DEFAULT_FINAL_TEXT.into()));
    }

    #[test]
    fn tool_results_are_deduplicated_across_requests() {
        let req = |n: usize| LoggedRequest {
            method: "POST".into(),
            path: "/v1/messages?beta=true".into(),
            auth: None,
            body: json!({"messages": (0..n).map(|i| json!({
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"),
                             "is_error": i == 0,
                             "content": if i == 0 { json!("denied") }
                                        else { json!([{"type": "text", "text": "ok"}]) }}]
            })).collect::<Vec<_>>()}),
        };
        let seen = tool_results(&[req(1), req(2)]);
        assert_eq!(seen.len(), 2);
        assert_eq!((seen[0].is_error, seen[0].text.as_str()), (true, "denied"));
        assert_eq!((seen[1].is_error, seen[1].text.as_str()), (false, "ok"));
    }
}
