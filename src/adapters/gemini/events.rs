//! Gemini CLI's `--output-format stream-json` lines, as typed serde enums, and the parser that
//! turns them into the engine's [`StreamEvent`]s.
//!
//! `init {session_id, model}` names the *requested* model; the served one is the key of
//! `result.stats.models` (the response's `modelVersion`). `message` with `role: assistant`
//! carries the answer in chunks (`delta: true`); `tool_use` / `tool_result` are tool calls;
//! `error {severity, message}` is a notice (loop detection, turn limits); `result {status,
//! stats}` is the terminal envelope. Usage comes from `result.stats`: `input` excludes the
//! `cached` tokens, which count as cache reads.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::Value;

use crate::adapter::{ParseError, StreamOutcome, StreamParser, Terminal};
use crate::contract::{
    ActivityKind, CommandStatus, Confirmed, NoticeLevel, Reported, StreamEvent, Usage,
};
use crate::text::tail;

/// How much of a command's output an event carries.
const OUTPUT_TAIL: usize = 4 * 1024;

/// The shell tool's name in 0.61.0.
pub const SHELL_TOOL: &str = "run_shell_command";

/// One stdout line.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    Init {
        #[serde(default)]
        session_id: Option<String>,
        #[serde(default)]
        model: Option<String>,
    },
    Message {
        role: Role,
        #[serde(default)]
        content: String,
    },
    ToolUse {
        tool_name: String,
        tool_id: String,
        #[serde(default)]
        parameters: Value,
    },
    ToolResult {
        tool_id: String,
        status: ToolStatus,
        #[serde(default)]
        output: Option<String>,
        #[serde(default)]
        error: Option<ToolError>,
    },
    Error {
        #[serde(default)]
        severity: Option<String>,
        message: String,
    },
    Result {
        status: ResultStatus,
        #[serde(default)]
        error: Option<Value>,
        #[serde(default)]
        stats: Option<Stats>,
    },
    /// A line type this build does not know: ignored, never terminal.
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Success,
    Error,
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    Success,
    Error,
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ToolError {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
}

/// Token counts of a run (and, under `models`, per served model).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Counts {
    #[serde(default)]
    pub total_tokens: u64,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cached: u64,
    /// `input_tokens` minus `cached`.
    #[serde(default)]
    pub input: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Stats {
    #[serde(flatten)]
    pub totals: Counts,
    #[serde(default)]
    pub models: BTreeMap<String, Counts>,
}

impl Counts {
    pub fn usage(&self) -> Usage {
        Usage {
            input: self
                .input
                .unwrap_or(self.input_tokens.saturating_sub(self.cached)),
            cache_read: self.cached,
            cache_write: 0,
            output: self.output_tokens,
            reasoning: 0,
            cost_usd: None,
        }
    }
}

impl Stats {
    /// The model that did the work: of the served models, the one with the most tokens.
    pub fn served_model(&self) -> Option<&str> {
        self.models
            .iter()
            .max_by_key(|(_, c)| c.total_tokens)
            .map(|(name, _)| name.as_str())
    }
}

/// Per-run parser state.
#[derive(Debug, Default)]
pub struct GeminiParser {
    /// Assistant text since the last tool call: the final answer once the run ends.
    answer: String,
    session_id: Option<String>,
    usage: Option<Usage>,
    terminal: Option<Terminal>,
    model: Option<String>,
    /// Shell commands by tool id, to pair results with their command line.
    commands: HashMap<String, String>,
}

impl GeminiParser {
    pub fn new() -> Self {
        Self::default()
    }
}

/// The text of a failed result's `error` (an object with `message`, or a string).
fn error_text(error: Option<&Value>) -> String {
    match error {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| v.to_string()),
        None => "Gemini CLI reported an error result".to_owned(),
    }
}

impl StreamParser for GeminiParser {
    fn parse_line(&mut self, line: &str) -> Result<Vec<StreamEvent>, ParseError> {
        if line.trim().is_empty() {
            return Ok(Vec::new());
        }
        let parsed: Line = serde_json::from_str(line)
            .map_err(|e| ParseError(format!("not a Gemini CLI stream-json line ({e})")))?;
        Ok(match parsed {
            Line::Init { session_id, .. } => {
                self.session_id = session_id.clone();
                vec![StreamEvent::Metadata {
                    session_id,
                    model: None,
                    effort: None,
                }]
            }
            Line::Message {
                role: Role::Assistant,
                content,
            } => {
                if content.is_empty() {
                    return Ok(Vec::new());
                }
                self.answer.push_str(&content);
                vec![StreamEvent::Text { text: content }]
            }
            Line::Message { .. } => Vec::new(),
            Line::ToolUse {
                tool_name,
                tool_id,
                parameters,
            } => {
                self.answer.clear();
                if tool_name == SHELL_TOOL {
                    let command = parameters
                        .get("command")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    self.commands.insert(tool_id.clone(), command.clone());
                    vec![StreamEvent::Command {
                        id: Some(tool_id),
                        command,
                        status: CommandStatus::Started,
                        exit_code: None,
                        output_tail: None,
                    }]
                } else {
                    vec![StreamEvent::Activity {
                        kind: ActivityKind::Tool,
                        text: format!("{tool_name} {parameters}"),
                    }]
                }
            }
            Line::ToolResult {
                tool_id,
                status,
                output,
                error,
            } => {
                let error_message = error.and_then(|e| e.message.or(e.kind));
                match self.commands.remove(&tool_id) {
                    Some(command) => {
                        let text = output.or(error_message).unwrap_or_default();
                        vec![StreamEvent::Command {
                            id: Some(tool_id),
                            command,
                            status: if status == ToolStatus::Success {
                                CommandStatus::Completed
                            } else {
                                CommandStatus::Failed
                            },
                            exit_code: None,
                            output_tail: (!text.is_empty())
                                .then(|| tail(&text, OUTPUT_TAIL).to_owned()),
                        }]
                    }
                    None if status != ToolStatus::Success => vec![StreamEvent::Notice {
                        level: NoticeLevel::Warning,
                        message: format!(
                            "tool call {tool_id} failed: {}",
                            error_message.unwrap_or_default()
                        ),
                    }],
                    None => Vec::new(),
                }
            }
            Line::Error { severity, message } => vec![StreamEvent::Notice {
                level: NoticeLevel::Warning,
                message: match severity {
                    Some(s) => format!("Gemini CLI {s}: {message}"),
                    None => message,
                },
            }],
            Line::Result {
                status,
                error,
                stats,
            } => {
                let mut events = Vec::new();
                if let Some(stats) = &stats {
                    self.usage = Some(stats.totals.usage());
                    if let Some(m) = stats.served_model() {
                        self.model = Some(m.to_owned());
                        events.push(StreamEvent::Metadata {
                            session_id: None,
                            model: Some(m.to_owned()),
                            effort: None,
                        });
                    }
                }
                let success = status == ResultStatus::Success;
                self.terminal = Some(if success {
                    Terminal::Success
                } else {
                    let message = error_text(error.as_ref());
                    events.push(StreamEvent::Error {
                        message: message.clone(),
                    });
                    Terminal::Error { message }
                });
                events.push(StreamEvent::Done { success });
                events
            }
            Line::Unknown => Vec::new(),
        })
    }

    fn outcome(&self) -> StreamOutcome {
        StreamOutcome {
            text: self.answer.trim().to_owned(),
            usage: self.usage,
            session_id: self.session_id.clone(),
            terminal: self.terminal.clone(),
            confirmed: Confirmed {
                model: match &self.model {
                    Some(m) => Reported::Confirmed(m.clone()),
                    None => Reported::Pending,
                },
                // Gemini CLI has no effort setting.
                effort: Reported::NotReported,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(lines: &[&str]) -> (Vec<StreamEvent>, StreamOutcome) {
        let mut p = GeminiParser::new();
        let mut events = Vec::new();
        for l in lines {
            events.extend(p.parse_line(l).unwrap());
        }
        (events, p.outcome())
    }

    #[test]
    fn a_run_with_a_command_then_the_answer() {
        let (events, out) = parse_all(&[
            r#"{"type":"init","timestamp":"T","session_id":"s-1","model":"gemini-2.5-flash"}"#,
            r#"{"type":"message","timestamp":"T","role":"user","content":"do it"}"#,
            r#"{"type":"message","timestamp":"T","role":"assistant","content":"Running.","delta":true}"#,
            r#"{"type":"tool_use","timestamp":"T","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"touch x","description":"d"}}"#,
            r#"{"type":"tool_result","timestamp":"T","tool_id":"t1","status":"success","output":"touch: cannot touch 'x': Permission denied"}"#,
            r#"{"type":"message","timestamp":"T","role":"assistant","content":"All done. ","delta":true}"#,
            r#"{"type":"message","timestamp":"T","role":"assistant","content":"Final.","delta":true}"#,
            r#"{"type":"result","timestamp":"T","status":"success","stats":{"total_tokens":817,"input_tokens":710,"output_tokens":107,"cached":18,"input":692,"duration_ms":835,"tool_calls":1,"models":{"fake-gemini-001":{"total_tokens":817,"input_tokens":710,"output_tokens":107,"cached":18,"input":692}}}}"#,
        ]);
        assert_eq!(out.text, "All done. Final.");
        assert_eq!(out.session_id.as_deref(), Some("s-1"));
        assert_eq!(out.terminal, Some(Terminal::Success));
        assert_eq!(
            out.usage,
            Some(Usage {
                input: 692,
                cache_read: 18,
                cache_write: 0,
                output: 107,
                reasoning: 0,
                cost_usd: None
            })
        );
        assert_eq!(
            out.confirmed.model,
            Reported::Confirmed("fake-gemini-001".into())
        );
        assert!(events.iter().any(|e| matches!(e,
            StreamEvent::Command { status: CommandStatus::Completed, command, output_tail: Some(o), .. }
                if command == "touch x" && o.contains("Permission denied"))));
        assert_eq!(events.last(), Some(&StreamEvent::Done { success: true }));
    }

    #[test]
    fn an_error_result_is_an_error_envelope_and_keeps_usage() {
        let (events, out) = parse_all(&[
            r#"{"type":"error","timestamp":"T","severity":"warning","message":"Loop detected"}"#,
            r#"{"type":"result","timestamp":"T","status":"error","error":{"type":"FatalError","message":"quota"},"stats":{"total_tokens":5,"input_tokens":4,"output_tokens":1,"cached":0,"input":4,"models":{}}}"#,
        ]);
        assert!(
            matches!(&events[0], StreamEvent::Notice { message, .. } if message.contains("Loop detected"))
        );
        assert_eq!(
            out.terminal,
            Some(Terminal::Error {
                message: "quota".into()
            })
        );
        assert_eq!(out.usage.unwrap().input, 4);
        assert_eq!(out.confirmed.model, Reported::Pending);
    }

    #[test]
    fn unknown_types_are_ignored_and_garbage_is_malformed() {
        let mut p = GeminiParser::new();
        assert!(
            p.parse_line(r#"{"type":"something_new","x":1}"#)
                .unwrap()
                .is_empty()
        );
        assert!(p.parse_line("not json").is_err());
        assert_eq!(p.outcome().terminal, None);
    }
}
