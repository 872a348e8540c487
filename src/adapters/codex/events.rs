//! `codex exec --json` stream parsing (codex-cli 0.171.0).
//!
//! The stream is JSON Lines, one object per line, tagged by `type`. Typed serde enums model the
//! events and item kinds we understand; anything else falls into an `Unknown` variant that is
//! ignored and never establishes completion. A line that is not a JSON object with a string
//! `type` is a [`ParseError`].
//!
//! Mapping (see `docs/verification/codex.md` for what the real binary prints):
//! * `thread.started` → `Metadata { session_id }`
//! * `item.*` `agent_message` → `Text` (the last one is the final answer)
//! * `item.*` `command_execution` → `Command` (started / completed / failed / declined)
//! * `reasoning`, `todo_list`, `plan`, `file_change`, `mcp_tool_call`, `web_search`,
//!   `collab_tool_call` → `Activity`
//! * item `error` and top-level `error` → `Notice` (warning). Codex prints one per retry
//!   ("Reconnecting... 2/5"); they are not failures.
//! * `turn.failed` → `Error` + `Done { success: false }`, terminal error
//! * `turn.completed` → `Done { success: true }`, terminal success, usage
//!
//! Usage: codex reports usage per turn (the sum over that turn's model requests) on
//! `turn.completed`. A run normally has one turn; should a stream carry several, each
//! `turn.completed` is a distinct turn and their usage is summed (never a repeated cumulative
//! report, so nothing is counted twice). The last terminal event decides the outcome.

use serde::Deserialize;

use crate::adapter::{ParseError, StreamOutcome, StreamParser, Terminal};
use crate::contract::{
    ActivityKind, CommandStatus, Confirmed, NoticeLevel, Reported, StreamEvent, Usage,
};

/// How much of a command's output a `Command` event carries (its tail).
pub const OUTPUT_TAIL_BYTES: usize = 4 * 1024;

/// One top-level event of the stream.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
enum ThreadEvent {
    #[serde(rename = "thread.started")]
    ThreadStarted { thread_id: String },
    #[serde(rename = "turn.started")]
    TurnStarted {},
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        #[serde(default)]
        usage: Option<CodexUsage>,
    },
    #[serde(rename = "turn.failed")]
    TurnFailed { error: ErrorBody },
    #[serde(rename = "item.started")]
    ItemStarted { item: ThreadItem },
    #[serde(rename = "item.updated")]
    ItemUpdated { item: ThreadItem },
    #[serde(rename = "item.completed")]
    ItemCompleted { item: ThreadItem },
    #[serde(rename = "error")]
    Error { message: String },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: String,
}

/// Codex's per-turn usage. 0.171.0 prints all five fields; older versions only the first three.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct CodexUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    cached_input_tokens: u64,
    #[serde(default)]
    cache_write_input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    reasoning_output_tokens: u64,
}

impl CodexUsage {
    /// Normalise. Codex's `input_tokens` is the turn's whole input, of which
    /// `cached_input_tokens` were read from and `cache_write_input_tokens` written to the
    /// prompt cache; our `input` is the remainder, so `total_tokens()` counts nothing twice.
    fn normalise(self) -> Usage {
        Usage {
            input: self
                .input_tokens
                .saturating_sub(self.cached_input_tokens)
                .saturating_sub(self.cache_write_input_tokens),
            cache_read: self.cached_input_tokens,
            cache_write: self.cache_write_input_tokens,
            output: self.output_tokens,
            reasoning: self.reasoning_output_tokens,
            cost_usd: None,
        }
    }
}

#[derive(Debug, Deserialize)]
struct ThreadItem {
    #[serde(default)]
    id: Option<String>,
    #[serde(flatten)]
    details: ItemDetails,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ItemDetails {
    AgentMessage {
        #[serde(default)]
        text: String,
    },
    Reasoning {
        #[serde(default)]
        text: String,
    },
    CommandExecution {
        #[serde(default)]
        command: String,
        #[serde(default)]
        aggregated_output: String,
        #[serde(default)]
        exit_code: Option<i64>,
        #[serde(default)]
        status: Option<String>,
    },
    FileChange {
        #[serde(default)]
        changes: Vec<FileUpdate>,
        #[serde(default)]
        status: Option<String>,
    },
    McpToolCall {
        #[serde(default)]
        server: String,
        #[serde(default)]
        tool: String,
        #[serde(default)]
        error: Option<ErrorBody>,
        #[serde(default)]
        status: Option<String>,
    },
    CollabToolCall {
        #[serde(default)]
        tool: String,
        #[serde(default)]
        status: Option<String>,
    },
    WebSearch {
        #[serde(default)]
        query: String,
    },
    TodoList {
        #[serde(default)]
        items: Vec<TodoItem>,
    },
    Plan {
        #[serde(default)]
        text: String,
    },
    Error {
        #[serde(default)]
        message: String,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct FileUpdate {
    #[serde(default)]
    path: String,
    #[serde(default)]
    kind: String,
}

#[derive(Debug, Deserialize)]
struct TodoItem {
    #[serde(default)]
    text: String,
    #[serde(default)]
    completed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Started,
    Updated,
    Completed,
}

/// Per-run parser state.
#[derive(Debug, Default)]
pub struct CodexParser {
    text: String,
    usage: Option<Usage>,
    session_id: Option<String>,
    terminal: Option<Terminal>,
    /// Every warning/error text the stream carried (retries included), for diagnostics.
    notices: Vec<String>,
}

impl CodexParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// The warning texts seen so far (retry notices, non-fatal error items), oldest first.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    fn notice(&mut self, message: String) -> StreamEvent {
        self.notices.push(message.clone());
        StreamEvent::Notice {
            level: NoticeLevel::Warning,
            message,
        }
    }

    fn item(&mut self, phase: Phase, item: ThreadItem) -> Vec<StreamEvent> {
        let id = item.id;
        match item.details {
            ItemDetails::AgentMessage { text } => {
                if phase != Phase::Completed {
                    return vec![];
                }
                self.text = text.clone();
                vec![StreamEvent::Text { text }]
            }
            ItemDetails::Reasoning { text } => {
                if phase != Phase::Completed || text.trim().is_empty() {
                    return vec![];
                }
                vec![activity(ActivityKind::Reasoning, text)]
            }
            ItemDetails::CommandExecution {
                command,
                aggregated_output,
                exit_code,
                status,
            } => {
                let status = match (phase, status.as_deref()) {
                    (_, Some("completed")) => CommandStatus::Completed,
                    (_, Some("failed")) => CommandStatus::Failed,
                    (_, Some("declined")) => CommandStatus::Declined,
                    (Phase::Started, _) => CommandStatus::Started,
                    // Progress updates of a running command carry nothing new to show.
                    (Phase::Updated, _) => return vec![],
                    // Completed without a final status: judge by the exit code.
                    (Phase::Completed, _) => match exit_code {
                        Some(0) => CommandStatus::Completed,
                        _ => CommandStatus::Failed,
                    },
                };
                let output_tail = (status != CommandStatus::Started
                    && !aggregated_output.is_empty())
                .then(|| crate::text::tail(&aggregated_output, OUTPUT_TAIL_BYTES).to_owned());
                vec![StreamEvent::Command {
                    id,
                    command,
                    status,
                    exit_code,
                    output_tail,
                }]
            }
            ItemDetails::FileChange { changes, status } => {
                if phase != Phase::Completed {
                    return vec![];
                }
                let list: Vec<String> = changes
                    .iter()
                    .map(|c| format!("{} {}", c.kind, c.path))
                    .collect();
                let mut text = format!("file change: {}", list.join(", "));
                if let Some(s) = status.filter(|s| s != "completed") {
                    text.push_str(&format!(" ({s})"));
                }
                vec![activity(ActivityKind::FileChange, text)]
            }
            ItemDetails::McpToolCall {
                server,
                tool,
                error,
                status,
            } => {
                let mut text = format!("MCP tool {server}/{tool}");
                match phase {
                    Phase::Started => text.push_str(" started"),
                    Phase::Updated => return vec![],
                    Phase::Completed => {
                        text.push_str(&format!(" {}", status.as_deref().unwrap_or("completed")));
                        if let Some(e) = error.filter(|e| !e.message.is_empty()) {
                            text.push_str(&format!(": {}", e.message));
                        }
                    }
                }
                vec![activity(ActivityKind::Tool, text)]
            }
            ItemDetails::CollabToolCall { tool, status } => {
                if phase == Phase::Updated {
                    return vec![];
                }
                let state = match phase {
                    Phase::Started => "started".to_owned(),
                    _ => status.unwrap_or_else(|| "completed".to_owned()),
                };
                vec![activity(
                    ActivityKind::Tool,
                    format!("sub-agent {tool} {state}"),
                )]
            }
            ItemDetails::WebSearch { query } => {
                if phase != Phase::Completed {
                    return vec![];
                }
                vec![activity(ActivityKind::Tool, format!("web search: {query}"))]
            }
            ItemDetails::TodoList { items } => {
                let lines: Vec<String> = items
                    .iter()
                    .map(|i| format!("[{}] {}", if i.completed { "x" } else { " " }, i.text))
                    .collect();
                vec![activity(ActivityKind::Plan, lines.join("\n"))]
            }
            ItemDetails::Plan { text } => {
                if phase != Phase::Completed {
                    return vec![];
                }
                vec![activity(ActivityKind::Plan, text)]
            }
            ItemDetails::Error { message } => {
                if phase != Phase::Completed {
                    return vec![];
                }
                vec![self.notice(message)]
            }
            ItemDetails::Unknown => vec![],
        }
    }
}

fn activity(kind: ActivityKind, text: String) -> StreamEvent {
    StreamEvent::Activity { kind, text }
}

fn add_usage(total: Option<Usage>, turn: Usage) -> Usage {
    match total {
        None => turn,
        Some(t) => Usage {
            input: t.input + turn.input,
            cache_read: t.cache_read + turn.cache_read,
            cache_write: t.cache_write + turn.cache_write,
            output: t.output + turn.output,
            reasoning: t.reasoning + turn.reasoning,
            cost_usd: None,
        },
    }
}

impl StreamParser for CodexParser {
    fn parse_line(&mut self, line: &str) -> Result<Vec<StreamEvent>, ParseError> {
        let value: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| ParseError(format!("codex printed a line that is not JSON ({e})")))?;
        match value.get("type") {
            Some(serde_json::Value::String(_)) => {}
            _ if !value.is_object() => {
                return Err(ParseError(
                    "codex printed a JSON value that is not an object".into(),
                ));
            }
            _ => {
                return Err(ParseError(
                    "codex printed a JSON object without a string `type`".into(),
                ));
            }
        }
        let event: ThreadEvent = serde_json::from_value(value).map_err(|e| {
            ParseError(format!(
                "codex printed a known event with an unexpected shape ({e})"
            ))
        })?;
        Ok(match event {
            ThreadEvent::ThreadStarted { thread_id } => {
                self.session_id = Some(thread_id.clone());
                vec![StreamEvent::Metadata {
                    session_id: Some(thread_id),
                    model: None,
                    effort: None,
                }]
            }
            ThreadEvent::TurnStarted {} => vec![],
            ThreadEvent::TurnCompleted { usage } => {
                let mut events = Vec::new();
                if let Some(u) = usage {
                    let total = add_usage(self.usage, u.normalise());
                    self.usage = Some(total);
                    events.push(StreamEvent::Usage { usage: total });
                }
                self.terminal = Some(Terminal::Success);
                events.push(StreamEvent::Done { success: true });
                events
            }
            ThreadEvent::TurnFailed { error } => {
                let message = if error.message.trim().is_empty() {
                    "codex reported that the turn failed (no message)".to_owned()
                } else {
                    error.message
                };
                self.terminal = Some(Terminal::Error {
                    message: message.clone(),
                });
                vec![
                    StreamEvent::Error { message },
                    StreamEvent::Done { success: false },
                ]
            }
            ThreadEvent::ItemStarted { item } => self.item(Phase::Started, item),
            ThreadEvent::ItemUpdated { item } => self.item(Phase::Updated, item),
            ThreadEvent::ItemCompleted { item } => self.item(Phase::Completed, item),
            ThreadEvent::Error { message } => vec![self.notice(message)],
            ThreadEvent::Unknown => vec![],
        })
    }

    fn stderr_line(&mut self, line: &str) -> Option<StreamEvent> {
        // Codex prints configuration warnings on stderr (for example that untrusted
        // project-local configuration was disabled, or that its sandbox helper could not be
        // set up). Show those; the rest (tracing, backtraces) stays in the stderr tail.
        let trimmed = line.trim();
        let lower = trimmed.to_ascii_lowercase();
        lower.starts_with("warning:").then(|| StreamEvent::Notice {
            level: NoticeLevel::Warning,
            message: trimmed.to_owned(),
        })
    }

    fn outcome(&self) -> StreamOutcome {
        StreamOutcome {
            text: self.text.clone(),
            usage: self.usage,
            session_id: self.session_id.clone(),
            terminal: self.terminal.clone(),
            confirmed: Confirmed {
                model: Reported::NotReported,
                effort: Reported::NotReported,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(lines: &[&str]) -> (CodexParser, Vec<StreamEvent>) {
        let mut p = CodexParser::new();
        let mut out = Vec::new();
        for l in lines {
            out.extend(p.parse_line(l).unwrap());
        }
        (p, out)
    }

    #[test]
    fn usage_maps_all_five_fields() {
        let (p, ev) = parse_all(&[
            r#"{"type":"turn.completed","usage":{"input_tokens":303,"cached_input_tokens":30,"cache_write_input_tokens":7,"output_tokens":63,"reasoning_output_tokens":15}}"#,
        ]);
        let o = p.outcome();
        assert_eq!(
            ev,
            vec![
                StreamEvent::Usage {
                    usage: o.usage.unwrap()
                },
                StreamEvent::Done { success: true }
            ]
        );
        assert_eq!(
            o.usage,
            Some(Usage {
                input: 266,
                cache_read: 30,
                cache_write: 7,
                output: 63,
                reasoning: 15,
                cost_usd: None
            })
        );
        assert_eq!(o.usage.unwrap().total_tokens(), 303 + 63);
        assert_eq!(o.terminal, Some(Terminal::Success));
        assert_eq!(o.confirmed.model, Reported::NotReported);
        assert_eq!(o.confirmed.effort, Reported::NotReported);
    }

    #[test]
    fn usage_of_distinct_turns_is_summed_once_each() {
        let line = r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":10,"output_tokens":20}}"#;
        let (p, _) = parse_all(&[line, line]);
        let u = p.outcome().usage.unwrap();
        assert_eq!(
            (u.input, u.cache_read, u.cache_write, u.output),
            (180, 20, 0, 40)
        );
    }

    #[test]
    fn older_usage_without_new_fields_defaults_to_zero() {
        let (p, _) = parse_all(&[
            r#"{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":9,"output_tokens":1}}"#,
        ]);
        let u = p.outcome().usage.unwrap();
        assert_eq!((u.input, u.cache_read, u.reasoning), (0, 9, 0));
    }

    #[test]
    fn unknown_events_and_items_are_ignored_and_establish_nothing() {
        let (p, ev) = parse_all(&[
            r#"{"type":"brand.new.event","x":1}"#,
            r#"{"type":"item.completed","item":{"id":"z","type":"hologram","text":"?"}}"#,
            r#"{"type":"item.plan.delta","item_id":"i","delta":"d"}"#,
        ]);
        assert!(ev.is_empty());
        let o = p.outcome();
        assert_eq!(o.terminal, None);
        assert_eq!(o.text, "");
        assert_eq!(o.usage, None);
    }

    #[test]
    fn malformed_lines_are_parse_errors() {
        let mut p = CodexParser::new();
        for bad in [
            "{not json",
            "[1,2]",
            "\"text\"",
            "42",
            r#"{"no_type":1}"#,
            r#"{"type":5}"#,
            r#"{"type":null}"#,
        ] {
            assert!(p.parse_line(bad).is_err(), "{bad}");
        }
        // A known event whose required field is missing is malformed, not unknown.
        assert!(p.parse_line(r#"{"type":"thread.started"}"#).is_err());
    }

    #[test]
    fn missing_terminal_leaves_terminal_unset() {
        let (p, _) = parse_all(&[
            r#"{"type":"thread.started","thread_id":"t1"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"partial"}}"#,
        ]);
        let o = p.outcome();
        assert_eq!(o.terminal, None);
        assert_eq!(o.text, "partial");
        assert_eq!(o.session_id.as_deref(), Some("t1"));
    }

    #[test]
    fn retry_errors_then_completed_is_success_with_notices_kept() {
        let (p, ev) = parse_all(&[
            r#"{"type":"turn.started"}"#,
            r#"{"type":"error","message":"Reconnecting... 1/5 (stream disconnected)"}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Falling back from WebSockets"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"done"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}"#,
        ]);
        assert_eq!(p.outcome().terminal, Some(Terminal::Success));
        assert_eq!(p.notices().len(), 2);
        assert!(matches!(
            &ev[0],
            StreamEvent::Notice { level: NoticeLevel::Warning, message } if message.starts_with("Reconnecting")
        ));
    }

    #[test]
    fn turn_failed_is_an_error_envelope() {
        let (p, ev) = parse_all(&[
            r#"{"type":"error","message":"boom"}"#,
            r#"{"type":"turn.failed","error":{"message":"boom"}}"#,
        ]);
        assert_eq!(
            ev[1..],
            [
                StreamEvent::Error {
                    message: "boom".into()
                },
                StreamEvent::Done { success: false }
            ]
        );
        assert_eq!(
            p.outcome().terminal,
            Some(Terminal::Error {
                message: "boom".into()
            })
        );
    }

    #[test]
    fn usage_reported_before_a_failure_is_kept() {
        let (p, _) = parse_all(&[
            r#"{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2}}"#,
            r#"{"type":"turn.failed","error":{"message":"second turn failed"}}"#,
        ]);
        let o = p.outcome();
        assert_eq!(o.usage.map(|u| (u.input, u.output)), Some((10, 2)));
        assert!(
            matches!(o.terminal, Some(Terminal::Error { .. })),
            "the last terminal decides"
        );
    }

    #[test]
    fn last_agent_message_is_the_answer() {
        let (p, ev) = parse_all(&[
            r#"{"type":"item.completed","item":{"id":"a","type":"agent_message","text":"first"}}"#,
            r#"{"type":"item.completed","item":{"id":"b","type":"agent_message","text":"final"}}"#,
        ]);
        assert_eq!(ev.len(), 2);
        assert_eq!(p.outcome().text, "final");
    }

    #[test]
    fn command_events_carry_status_exit_and_bounded_tail() {
        let big = "é".repeat(5000); // 10000 bytes, 2-byte chars
        let started = r#"{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'x'","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#;
        let done = serde_json::json!({"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'x'","aggregated_output":format!("a{big}"),"exit_code":1,"status":"failed"}}).to_string();
        let (_, ev) = parse_all(&[started, &done]);
        assert_eq!(
            ev[0],
            StreamEvent::Command {
                id: Some("item_0".into()),
                command: "/bin/bash -lc 'x'".into(),
                status: CommandStatus::Started,
                exit_code: None,
                output_tail: None
            }
        );
        let StreamEvent::Command {
            status,
            exit_code,
            output_tail: Some(t),
            ..
        } = &ev[1]
        else {
            panic!("{:?}", ev[1])
        };
        assert_eq!(*status, CommandStatus::Failed);
        assert_eq!(*exit_code, Some(1));
        assert!(t.len() <= OUTPUT_TAIL_BYTES && t.len() >= OUTPUT_TAIL_BYTES - 1);
        assert!(t.chars().all(|c| c == 'é'));
    }

    #[test]
    fn activities_a_person_can_follow() {
        let (_, ev) = parse_all(&[
            r#"{"type":"item.completed","item":{"id":"r","type":"reasoning","text":"thinking"}}"#,
            r#"{"type":"item.started","item":{"id":"t","type":"todo_list","items":[{"text":"read","completed":true},{"text":"write","completed":false}]}}"#,
            r#"{"type":"item.completed","item":{"id":"p","type":"plan","text":"1. look"}}"#,
            r#"{"type":"item.completed","item":{"id":"f","type":"file_change","changes":[{"path":"a.txt","kind":"add"}],"status":"failed"}}"#,
            r#"{"type":"item.started","item":{"id":"m","type":"mcp_tool_call","server":"s","tool":"t","arguments":{},"result":null,"error":null,"status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"m","type":"mcp_tool_call","server":"s","tool":"t","arguments":{},"result":null,"error":{"message":"nope"},"status":"failed"}}"#,
            r#"{"type":"item.completed","item":{"id":"w","type":"web_search","query":"rust serde"}}"#,
        ]);
        let texts: Vec<(ActivityKind, String)> = ev
            .into_iter()
            .map(|e| match e {
                StreamEvent::Activity { kind, text } => (kind, text),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            texts,
            vec![
                (ActivityKind::Reasoning, "thinking".into()),
                (ActivityKind::Plan, "[x] read\n[ ] write".into()),
                (ActivityKind::Plan, "1. look".into()),
                (
                    ActivityKind::FileChange,
                    "file change: add a.txt (failed)".into()
                ),
                (ActivityKind::Tool, "MCP tool s/t started".into()),
                (ActivityKind::Tool, "MCP tool s/t failed: nope".into()),
                (ActivityKind::Tool, "web search: rust serde".into()),
            ]
        );
    }

    #[test]
    fn stderr_warnings_become_notices() {
        let mut p = CodexParser::new();
        assert!(
            p.stderr_line("Reading additional input from stdin...")
                .is_none()
        );
        assert!(matches!(
            p.stderr_line("warning: Untrusted project-local configuration is disabled."),
            Some(StreamEvent::Notice { .. })
        ));
    }
}
