//! Claude Code's `--output-format stream-json --verbose` stream, parsed into [`StreamEvent`]s.
//!
//! One JSON object per line, tagged by `type` (and `subtype` for `system`):
//! - `system/init` → [`StreamEvent::Metadata`] (session id, the model the CLI runs);
//! - `assistant` → one event per content block: `text` → [`StreamEvent::Text`], `tool_use` →
//!   [`StreamEvent::Command`] started, `thinking` → reasoning [`StreamEvent::Activity`]. Each
//!   carries the message's usage so far; a message id is counted once however often it repeats;
//! - `user` `tool_result` blocks → the matching command completed, failed or declined;
//! - `system/api_retry`, `system/permission_denied` → [`StreamEvent::Notice`];
//! - `result` → terminal and authoritative (text, usage with cache reads/writes, cost). Errors
//!   come as `is_error: true`, often with `subtype: "success"` (D7): `is_error` decides.
//!
//! Unknown types and subtypes are ignored and never count as completion; a line that is not a
//! JSON object with a string `type` is a [`ParseError`]. Everything after the first `result`
//! is ignored.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use crate::adapter::{ParseError, StreamOutcome, StreamParser, Terminal};
use crate::contract::{
    ActivityKind, CommandStatus, Confirmed, NoticeLevel, Reported, StreamEvent, Usage,
};

/// How much of a command's output is kept on its event.
pub const OUTPUT_TAIL_BYTES: usize = 4 * 1024;

/// The stderr marker the CLI prints for a model name it does not know (a warning, D7).
pub const UNRECOGNIZED_MODEL_MARKER: &str = "[claude-code:unrecognized_model]";

/// The CLI's own "sandbox required but unavailable" startup failure.
pub const SANDBOX_UNAVAILABLE_REASON: &str = "sandbox_required_unavailable";

/// The fix a person needs when Claude Code's sandbox cannot start.
pub const SANDBOX_INSTALL_HINT: &str = "Claude Code's sandbox needs bubblewrap (bwrap) and socat; install them with `apt-get install bubblewrap socat`";

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line {
    System(System),
    Assistant(AssistantLine),
    User(UserLine),
    Result(ResultLine),
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
enum System {
    Init(Init),
    ApiRetry(ApiRetry),
    PermissionDenied(PermissionDenied),
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct Init {
    session_id: Option<String>,
    model: Option<String>,
    sandbox_enabled: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct ApiRetry {
    attempt: Option<u64>,
    max_retries: Option<u64>,
    retry_delay_ms: Option<u64>,
    error_status: Option<u64>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct PermissionDenied {
    tool_name: Option<String>,
    message: Option<String>,
}

#[derive(Debug, Deserialize)]
struct AssistantLine {
    message: AssistantMessage,
    /// Set on the CLI's synthetic error messages (`model_not_found`, `server_error`, ...).
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct AssistantMessage {
    id: Option<String>,
    model: Option<String>,
    #[serde(default)]
    content: Vec<Value>,
    usage: Option<ApiUsage>,
}

#[derive(Debug, Deserialize)]
struct UserLine {
    message: UserMessage,
    #[serde(default)]
    tool_result_meta: Vec<ToolResultMeta>,
}

#[derive(Debug, Deserialize)]
struct UserMessage {
    content: Value,
}

#[derive(Debug, Deserialize)]
struct ToolResultMeta {
    id: Option<String>,
    permission_decision: Option<PermissionDecision>,
}

#[derive(Debug, Deserialize)]
struct PermissionDecision {
    decision: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ResultLine {
    subtype: Option<String>,
    #[serde(default)]
    is_error: bool,
    result: Option<String>,
    session_id: Option<String>,
    usage: Option<ApiUsage>,
    total_cost_usd: Option<f64>,
    api_error_status: Option<u64>,
    api_error_type: Option<String>,
    #[serde(default)]
    errors: Vec<String>,
    startup_failure_reason: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct ApiUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct OutputDetails {
    #[serde(default)]
    thinking_tokens: u64,
}

impl ApiUsage {
    fn normalised(self, cost_usd: Option<f64>) -> Usage {
        Usage {
            input: self.input_tokens,
            cache_read: self.cache_read_input_tokens,
            cache_write: self.cache_creation_input_tokens,
            output: self.output_tokens,
            reasoning: self
                .output_tokens_details
                .unwrap_or_default()
                .thinking_tokens,
            cost_usd,
        }
    }
}

/// What the stream's `result` event established.
#[derive(Debug, Clone, PartialEq)]
struct Final {
    terminal: Terminal,
    text: String,
    usage: Option<Usage>,
}

/// Per-run state of the Claude stream parser.
#[derive(Debug, Default)]
pub struct ClaudeParser {
    session_id: Option<String>,
    model: Option<String>,
    /// Usage per assistant message id, in first-seen order; a repeated id replaces its entry.
    usage_by_message: Vec<(String, Usage)>,
    /// Text blocks of the latest assistant message (the answer when no `result` arrives).
    last_message: Option<String>,
    last_text: Vec<String>,
    /// The assistant event's `error` (e.g. `model_not_found`), kept for failure messages.
    api_error: Option<String>,
    /// Tool calls by tool-use id (tool name, one-line description), so results can name them.
    commands: HashMap<String, (String, String)>,
    fin: Option<Final>,
}

impl ClaudeParser {
    pub fn new() -> Self {
        Self::default()
    }

    fn system(&mut self, s: System) -> Result<Vec<StreamEvent>, ParseError> {
        Ok(match s {
            System::Init(init) => {
                if init.sandbox_enabled == Some(false) {
                    return Err(ParseError(format!(
                        "Claude Code reported its sandbox disabled (system/init sandbox_enabled: false); \
                         the run is not read-only. {SANDBOX_INSTALL_HINT}"
                    )));
                }
                if init.session_id.is_some() {
                    self.session_id = init.session_id.clone();
                }
                if init.model.is_some() {
                    self.model = init.model.clone();
                }
                vec![StreamEvent::Metadata {
                    session_id: init.session_id,
                    model: init.model,
                    effort: None,
                }]
            }
            System::ApiRetry(r) => {
                let status = r
                    .error_status
                    .map(|s| format!("HTTP {s}"))
                    .unwrap_or_else(|| "a connection error".to_owned());
                let kind = r.error.map(|e| format!(" ({e})")).unwrap_or_default();
                let attempt = match (r.attempt, r.max_retries) {
                    (Some(a), Some(m)) => format!("retry {a}/{m}"),
                    (Some(a), None) => format!("retry {a}"),
                    _ => "retrying".to_owned(),
                };
                let delay = r
                    .retry_delay_ms
                    .map(|d| format!(" in {d} ms"))
                    .unwrap_or_default();
                vec![StreamEvent::Notice {
                    level: NoticeLevel::Warning,
                    message: format!("model API returned {status}{kind}; {attempt}{delay}"),
                }]
            }
            System::PermissionDenied(p) => vec![StreamEvent::Notice {
                level: NoticeLevel::Info,
                message: format!(
                    "{} was refused: {}",
                    p.tool_name.as_deref().unwrap_or("a tool"),
                    p.message.as_deref().unwrap_or("permission denied")
                ),
            }],
            System::Unknown => Vec::new(),
        })
    }

    fn assistant(&mut self, a: AssistantLine) -> Vec<StreamEvent> {
        if a.error.is_some() {
            self.api_error = a.error;
        }
        let msg = a.message;
        let synthetic = msg.model.as_deref() == Some("<synthetic>");
        let mut reported = false;
        if let (Some(id), Some(u), false) = (&msg.id, msg.usage, synthetic) {
            let usage = u.normalised(None);
            match self.usage_by_message.iter_mut().find(|(k, _)| k == id) {
                Some(entry) => entry.1 = usage,
                None => self.usage_by_message.push((id.clone(), usage)),
            }
            reported = true;
        }
        if msg.id.is_none() || msg.id != self.last_message {
            self.last_message = msg.id.clone();
            self.last_text.clear();
        }
        let mut events = Vec::new();
        for block in msg.content {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let text = str_field(&block, "text");
                    if !text.is_empty() {
                        self.last_text.push(text.clone());
                        events.push(StreamEvent::Text { text });
                    }
                }
                Some("thinking") => {
                    let text = str_field(&block, "thinking");
                    if !text.trim().is_empty() {
                        events.push(StreamEvent::Activity {
                            kind: ActivityKind::Reasoning,
                            text,
                        });
                    }
                }
                Some("tool_use") => {
                    let id = block.get("id").and_then(Value::as_str).map(str::to_owned);
                    let command = describe_tool_use(&block);
                    if let Some(id) = &id {
                        let tool = str_field(&block, "name");
                        self.commands.insert(id.clone(), (tool, command.clone()));
                    }
                    events.push(StreamEvent::Command {
                        id,
                        command,
                        status: CommandStatus::Started,
                        exit_code: None,
                        output_tail: None,
                    });
                }
                _ => {}
            }
        }
        // The running total after this message, for budgets (each message id counted once).
        if let (true, Some(total)) = (reported, self.summed_usage()) {
            events.push(StreamEvent::Usage { usage: total });
        }
        events
    }

    fn user(&mut self, u: UserLine) -> Vec<StreamEvent> {
        let Value::Array(blocks) = u.message.content else {
            return Vec::new();
        };
        let mut events = Vec::new();
        for block in blocks {
            if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let id = block
                .get("tool_use_id")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let output = content_text(block.get("content"));
            let is_error = block
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let rejected = u.tool_result_meta.iter().any(|m| {
                m.id.is_some()
                    && m.id == id
                    && m.permission_decision
                        .as_ref()
                        .and_then(|d| d.decision.as_deref())
                        == Some("reject")
            });
            let status = if rejected {
                CommandStatus::Declined
            } else if is_error {
                CommandStatus::Failed
            } else {
                CommandStatus::Completed
            };
            let (tool, command) = id
                .as_ref()
                .and_then(|i| self.commands.get(i).cloned())
                .unwrap_or_else(|| ("tool".to_owned(), "tool".to_owned()));
            // Only shell commands have exit codes: `Exit code N` on failure, 0 on success.
            let exit_code = match (tool.as_str(), status) {
                ("Bash", CommandStatus::Completed) => Some(0),
                ("Bash", CommandStatus::Failed) => exit_code(&output),
                _ => None,
            };
            events.push(StreamEvent::Command {
                id,
                command,
                status,
                exit_code,
                output_tail: Some(crate::text::tail(&output, OUTPUT_TAIL_BYTES).to_owned()),
            });
        }
        events
    }

    fn result(&mut self, r: ResultLine) -> Vec<StreamEvent> {
        if r.session_id.is_some() && self.session_id.is_none() {
            self.session_id = r.session_id.clone();
        }
        let usage = r.usage.map(|u| u.normalised(r.total_cost_usd));
        let text = r.result.clone().unwrap_or_default();
        let success = !r.is_error && r.subtype.as_deref() == Some("success");
        let terminal = if success {
            Terminal::Success
        } else if r.startup_failure_reason.as_deref() == Some(SANDBOX_UNAVAILABLE_REASON) {
            Terminal::SandboxUnavailable {
                message: self.failure_message(&r),
            }
        } else {
            Terminal::Error {
                message: self.failure_message(&r),
            }
        };
        let mut events = Vec::new();
        if let Terminal::Error { message } | Terminal::SandboxUnavailable { message } = &terminal {
            events.push(StreamEvent::Error {
                message: message.clone(),
            });
        }
        if let Some(usage) = usage {
            events.push(StreamEvent::Usage { usage });
        }
        events.push(StreamEvent::Done { success });
        self.fin = Some(Final {
            terminal,
            text,
            usage,
        });
        events
    }

    fn failure_message(&self, r: &ResultLine) -> String {
        if r.startup_failure_reason.as_deref() == Some(SANDBOX_UNAVAILABLE_REASON) {
            let detail = r.errors.join("; ");
            return format!("{SANDBOX_INSTALL_HINT}. Claude Code said: {detail}");
        }
        let mut text = r
            .result
            .clone()
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| r.errors.join("; "));
        if text.trim().is_empty() {
            text = format!(
                "Claude Code ended with {}",
                r.subtype.as_deref().unwrap_or("an error")
            );
        }
        let mut detail = Vec::new();
        if let Some(s) = r.api_error_status {
            detail.push(format!("HTTP {s}"));
        }
        if let Some(t) = &r.api_error_type {
            detail.push(t.clone());
        }
        if let Some(e) = &self.api_error {
            detail.push(e.clone());
        }
        if detail.is_empty() {
            text
        } else {
            format!("{text} ({})", detail.join(", "))
        }
    }
}

impl StreamParser for ClaudeParser {
    fn parse_line(&mut self, line: &str) -> Result<Vec<StreamEvent>, ParseError> {
        // The first `result` is the answer. A background task can make the CLI start a second
        // turn with a second `result` (seen on 2.1.332 before the adapter turned background
        // tasks off): nothing after the first one counts, so a run has exactly one `done`.
        if self.fin.is_some() {
            return Ok(Vec::new());
        }
        let value: Value = serde_json::from_str(line).map_err(|e| {
            ParseError(format!(
                "not a JSON line ({e}): {}",
                tail_chars(line.trim(), 200)
            ))
        })?;
        if value.get("type").and_then(Value::as_str).is_none() {
            return Err(ParseError(format!(
                "not a stream-json event (no string \"type\"): {}",
                tail_chars(line.trim(), 200)
            )));
        }
        let parsed: Line = serde_json::from_value(value)
            .map_err(|e| ParseError(format!("unexpected shape of a stream-json event: {e}")))?;
        match parsed {
            Line::System(s) => self.system(s),
            Line::Assistant(a) => Ok(self.assistant(a)),
            Line::User(u) => Ok(self.user(u)),
            Line::Result(r) => Ok(self.result(r)),
            Line::Unknown => Ok(Vec::new()),
        }
    }

    fn stderr_line(&mut self, line: &str) -> Option<StreamEvent> {
        let rest = line.trim().strip_prefix(UNRECOGNIZED_MODEL_MARKER)?;
        let model = serde_json::from_str::<Value>(rest.trim())
            .ok()
            .and_then(|v| v.get("model").and_then(Value::as_str).map(str::to_owned));
        let message = match model {
            Some(m) => format!(
                "Claude Code does not recognise the model name {m:?}; the endpoint decides whether it exists"
            ),
            None => format!(
                "Claude Code does not recognise the model name: {}",
                rest.trim()
            ),
        };
        Some(StreamEvent::Notice {
            level: NoticeLevel::Warning,
            message,
        })
    }

    fn outcome(&self) -> StreamOutcome {
        let confirmed = Confirmed {
            model: match &self.model {
                Some(m) => Reported::Confirmed(m.clone()),
                None => Reported::Pending,
            },
            effort: Reported::NotReported,
        };
        match &self.fin {
            Some(f) => StreamOutcome {
                text: f.text.clone(),
                usage: f.usage.or_else(|| self.summed_usage()),
                session_id: self.session_id.clone(),
                terminal: Some(f.terminal.clone()),
                confirmed,
            },
            None => StreamOutcome {
                text: self.last_text.join("\n\n"),
                usage: self.summed_usage(),
                session_id: self.session_id.clone(),
                terminal: None,
                confirmed,
            },
        }
    }
}

impl ClaudeParser {
    /// The per-message usage added up (each message id once), when no `result` said better.
    fn summed_usage(&self) -> Option<Usage> {
        if self.usage_by_message.is_empty() {
            return None;
        }
        let mut total = Usage::default();
        for (_, u) in &self.usage_by_message {
            total.input += u.input;
            total.cache_read += u.cache_read;
            total.cache_write += u.cache_write;
            total.output += u.output;
            total.reasoning += u.reasoning;
        }
        Some(total)
    }
}

/// What a tool call does, in one line: the Bash command itself, `Read <path>`, or the tool name.
fn describe_tool_use(block: &Value) -> String {
    let name = block
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("tool")
        .to_owned();
    let input = block.get("input");
    match name.as_str() {
        "Bash" => input
            .and_then(|i| i.get("command"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or(name),
        "Read" => match input
            .and_then(|i| i.get("file_path"))
            .and_then(Value::as_str)
        {
            Some(p) => format!("Read {p}"),
            None => name,
        },
        _ => name,
    }
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A tool result's text: a string, or the text blocks of an array joined by newlines.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Claude reports a failed command as `Exit code N` on the first line.
fn exit_code(output: &str) -> Option<i64> {
    output
        .lines()
        .next()?
        .strip_prefix("Exit code ")?
        .trim()
        .parse()
        .ok()
}

fn tail_chars(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        s.to_owned()
    } else {
        format!("…{}", s.chars().skip(n - max).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real capture: a background task made the CLI start a second turn after its `result`.
    /// Only the first `result` counts: one `done`, the first answer.
    #[test]
    fn nothing_after_the_first_result_counts() {
        let capture =
            include_str!("../../../tests/fixtures/claude/background_task_second_turn.stream.jsonl");
        assert_eq!(capture.matches("\"type\":\"result\"").count(), 2);
        let mut p = ClaudeParser::new();
        let mut events = Vec::new();
        for line in capture.lines().filter(|l| !l.trim().is_empty()) {
            events.extend(p.parse_line(line).unwrap());
        }
        let done: Vec<_> = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Done { .. }))
            .collect();
        assert_eq!(done, [&StreamEvent::Done { success: true }]);
        let o = p.outcome();
        assert_eq!(o.terminal, Some(Terminal::Success));
        assert_eq!(o.text, "ANSWER_ONE");
        // Even a line that would be malformed is ignored once the answer is in.
        assert!(p.parse_line("not json").unwrap().is_empty());
    }
}
