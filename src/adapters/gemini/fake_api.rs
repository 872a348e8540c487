//! A fake Gemini API (`v1beta`) for driving the real `gemini` CLI offline.
//!
//! It answers `POST /v1beta/models/{model}:streamGenerateContent` with server-sent events and
//! `:generateContent` with one JSON response, in the real API's shape (`candidates`,
//! `usageMetadata`, `modelVersion`), following a typed [`Script`]. The step is the number of
//! `functionResponse` parts the request's conversation already holds, so the CLI's re-sends
//! never advance the script. Requests that offer no tools are the CLI's side queries (next
//! speaker, routing) and get a small JSON answer outside the script. Every request lands in
//! the [`RequestLog`]: what the CLI sent back for each tool call is the evidence that a write
//! was refused, or that a secret never reached the model. Binds 127.0.0.1 on port 0.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::loopback::{LoggedRequest, LoopbackServer, RequestLog};

/// One model turn of the script.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Call `run_shell_command` with this command line.
    Shell(String),
    /// Answer with this text and end the turn.
    Text(String),
    /// Answer this turn with an HTTP error.
    Fail(ApiError),
}

/// An HTTP error in the Google API's shape: `{"error":{"code":..,"message":..,"status":..}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: u16,
    pub status: String,
    pub message: String,
}

impl ApiError {
    pub fn new(code: u16, status: &str, message: &str) -> Self {
        Self {
            code,
            status: status.to_owned(),
            message: message.to_owned(),
        }
    }

    /// 400 `INVALID_ARGUMENT`.
    pub fn bad_request(message: &str) -> Self {
        Self::new(400, "INVALID_ARGUMENT", message)
    }

    /// 500 `INTERNAL`.
    pub fn server_error(message: &str) -> Self {
        Self::new(500, "INTERNAL", message)
    }
}

/// Token counts reported for every scripted turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnUsage {
    /// `promptTokenCount` (cached tokens included, as the real API counts them).
    pub prompt: u64,
    /// `candidatesTokenCount`.
    pub candidates: u64,
    /// `cachedContentTokenCount`.
    pub cached: u64,
}

impl Default for TurnUsage {
    fn default() -> Self {
        Self {
            prompt: 100,
            candidates: 20,
            cached: 0,
        }
    }
}

/// What the fake answers, turn by turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub steps: Vec<Step>,
    /// Every request fails like this (4xx/5xx tests).
    pub always_fail: Option<ApiError>,
    pub usage: TurnUsage,
    /// The `modelVersion` served; `None` echoes the requested model.
    pub model_version: Option<String>,
}

impl Default for Script {
    fn default() -> Self {
        Self::new()
    }
}

/// The final answer when the script runs out of steps.
pub const DEFAULT_FINAL_TEXT: &str = "FAKE_DONE";

impl Script {
    pub fn new() -> Self {
        Self {
            steps: Vec::new(),
            always_fail: None,
            usage: TurnUsage::default(),
            model_version: None,
        }
    }

    pub fn shell(mut self, command: impl Into<String>) -> Self {
        self.steps.push(Step::Shell(command.into()));
        self
    }

    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.steps.push(Step::Text(text.into()));
        self
    }

    pub fn fail(mut self, error: ApiError) -> Self {
        self.steps.push(Step::Fail(error));
        self
    }

    pub fn always_fail(mut self, error: ApiError) -> Self {
        self.always_fail = Some(error);
        self
    }

    pub fn usage(mut self, usage: TurnUsage) -> Self {
        self.usage = usage;
        self
    }

    pub fn model_version(mut self, name: impl Into<String>) -> Self {
        self.model_version = Some(name.into());
        self
    }

    /// The step for a conversation that already holds `responses` function responses.
    pub fn step_for(&self, responses: usize) -> Step {
        self.steps
            .get(responses)
            .cloned()
            .unwrap_or_else(|| Step::Text(DEFAULT_FINAL_TEXT.to_owned()))
    }
}

/// A running fake endpoint. Dropping it stops the server.
pub struct FakeGemini {
    pub server: LoopbackServer,
}

impl FakeGemini {
    pub async fn start(script: Script) -> std::io::Result<Self> {
        let log = RequestLog::default();
        let shared = Arc::new(Shared {
            script,
            log: log.clone(),
        });
        Ok(Self {
            server: LoopbackServer::serve(handle, shared, log).await?,
        })
    }

    /// The base URL for `GOOGLE_GEMINI_BASE_URL` (the CLI appends `/v1beta/...`).
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    pub fn log(&self) -> &RequestLog {
        &self.server.log
    }

    /// Scripted model requests (those that offer tools), in order.
    pub fn model_requests(&self) -> Vec<LoggedRequest> {
        self.log()
            .all()
            .into_iter()
            .filter(|r| r.method == "POST" && !offered_tools(&r.body).is_empty())
            .collect()
    }

    /// What the CLI sent back for each tool call, in order, once each.
    pub fn tool_results(&self) -> Vec<FunctionResponseSeen> {
        self.log()
            .all()
            .iter()
            .map(|r| function_responses(&r.body))
            .max_by_key(Vec::len)
            .unwrap_or_default()
    }

    /// Does any request body the CLI sent contain `needle`?
    pub fn saw(&self, needle: &str) -> bool {
        self.log()
            .all()
            .iter()
            .any(|r| r.body.to_string().contains(needle) || r.path.contains(needle))
    }
}

/// One `functionResponse` part the CLI sent to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionResponseSeen {
    pub name: String,
    /// The response's `output` (or `error`) text; the whole response as JSON otherwise.
    pub text: String,
}

/// Every `functionResponse` in a request's conversation, in order.
pub fn function_responses(body: &Value) -> Vec<FunctionResponseSeen> {
    parts(body)
        .filter_map(|p| p.get("functionResponse"))
        .map(|fr| {
            let response = fr.get("response").cloned().unwrap_or(Value::Null);
            let text = ["output", "error"]
                .iter()
                .find_map(|k| response.get(k).and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| response.to_string());
            FunctionResponseSeen {
                name: fr
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                text,
            }
        })
        .collect()
}

/// The tool names a request offered the model.
pub fn offered_tools(body: &Value) -> Vec<String> {
    body.get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("functionDeclarations").and_then(Value::as_array))
        .flatten()
        .filter_map(|f| f.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

fn parts(body: &Value) -> impl Iterator<Item = &Value> {
    body.get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("parts").and_then(Value::as_array))
        .flatten()
}

struct Shared {
    script: Script,
    log: RequestLog,
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let body = shared.log.record(
        &method,
        &path,
        &headers,
        &["x-goog-api-key", "authorization"],
        &body,
    );
    let Some((model, action)) = path
        .strip_prefix("/v1beta/models/")
        .and_then(|rest| rest.split_once(':'))
    else {
        return error_response(&ApiError::new(
            404,
            "NOT_FOUND",
            &format!("fake endpoint: no route {method} {path}"),
        ));
    };
    let script = &shared.script;
    if action == "countTokens" {
        return (StatusCode::OK, axum::Json(json!({"totalTokens": 1}))).into_response();
    }
    if let Some(e) = &script.always_fail {
        return error_response(e);
    }
    let served = script
        .model_version
        .clone()
        .unwrap_or_else(|| model.to_owned());
    let (part, usage) = if offered_tools(&body).is_empty() {
        // A side query: never part of the script, and it costs nothing.
        let text = json!({"reasoning": "fake", "next_speaker": "user", "model_choice": "flash"});
        (
            json!({"text": text.to_string()}),
            TurnUsage {
                prompt: 0,
                candidates: 0,
                cached: 0,
            },
        )
    } else {
        match script.step_for(function_responses(&body).len()) {
            Step::Fail(e) => return error_response(&e),
            Step::Text(t) => (json!({"text": t}), script.usage),
            Step::Shell(command) => (
                json!({"functionCall": {"name": super::events::SHELL_TOOL,
                       "args": {"command": command, "description": "Scripted command"}}}),
                script.usage,
            ),
        }
    };
    let chunk = json!({
        "candidates": [{"content": {"role": "model", "parts": [part]},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": usage.prompt,
            "candidatesTokenCount": usage.candidates,
            "cachedContentTokenCount": usage.cached,
            "totalTokenCount": usage.prompt + usage.candidates,
        },
        "modelVersion": served,
    });
    if action == "streamGenerateContent" {
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/event-stream")],
            format!("data: {chunk}\r\n\r\n"),
        )
            .into_response()
    } else {
        (StatusCode::OK, axum::Json(chunk)).into_response()
    }
}

fn error_response(e: &ApiError) -> Response {
    let status = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = json!({"error": {"code": e.code, "message": e.message, "status": e.status}});
    (status, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_follow_the_function_response_count() {
        let s = Script::new().shell("ls").text("done");
        assert_eq!(s.step_for(0), Step::Shell("ls".into()));
        assert_eq!(s.step_for(1), Step::Text("done".into()));
        assert_eq!(s.step_for(5), Step::Text(DEFAULT_FINAL_TEXT.into()));
    }

    #[test]
    fn reads_function_responses_and_offered_tools() {
        let body = json!({
            "contents": [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "run_shell_command"}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command",
                    "response": {"output": "Permission denied"}}}]},
            ],
            "tools": [{"functionDeclarations": [{"name": "run_shell_command"}, {"name": "read_file"}]}],
        });
        let seen = function_responses(&body);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].text, "Permission denied");
        assert_eq!(offered_tools(&body), ["run_shell_command", "read_file"]);
    }
}
