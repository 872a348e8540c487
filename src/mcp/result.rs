//! A dispatch's one result as an MCP tool result: the answer as text, the protocol's `result`
//! object as `structuredContent`. A failure is a tool result with `isError` whose text names the
//! kind and the fix (a JSON-RPC error would reach the host's model as an opaque "internal
//! error"), and it keeps the usage reported so far.

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::Value;

use crate::contract::{DispatchResult, FailureKind, Usage};
use crate::protocol::Line;

/// How much of the CLI's stderr a failure's text carries (the structured result has it all).
const STDERR_IN_TEXT: usize = 1200;

/// The tool result for a finished dispatch, successful or not.
pub fn dispatch(result: DispatchResult) -> CallToolResult {
    let text = if result.ok {
        result.text.clone()
    } else {
        failure_text(&result)
    };
    let ok = result.ok;
    let structured = serde_json::to_value(Line::result(result)).unwrap_or(Value::Null);
    with_structured(text, structured, !ok)
}

/// The tool result for a listing (`agents`, `models`): the JSON as text and as structured
/// content, so a host that shows only text still sees every field.
pub fn listing(value: &impl Serialize) -> CallToolResult {
    let structured = serde_json::to_value(value).unwrap_or(Value::Null);
    let text = serde_json::to_string_pretty(&structured).unwrap_or_default();
    with_structured(text, structured, false)
}

/// A tool that failed before it could produce anything structured (an unknown agent for
/// `models`, arguments that are not an object).
pub fn error(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

fn with_structured(text: String, structured: Value, is_error: bool) -> CallToolResult {
    let mut r = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    r.structured_content = Some(structured);
    r
}

fn failure_text(r: &DispatchResult) -> String {
    let agent = &r.identity.agent;
    let mut out = match &r.failure {
        Some(f) => format!(
            "Dispatch to {agent} failed ({kind}): {msg}\nFix: {fix}",
            kind = f.kind,
            msg = f.message,
            fix = fix(f.kind)
        ),
        None => format!("Dispatch to {agent} failed without a reason (a bug; please report it)"),
    };
    match &r.usage {
        Some(u) => out.push_str(&format!("\nUsage so far: {}", usage_line(u))),
        None => out.push_str("\nUsage so far: none reported"),
    }
    let stderr = r.stderr_tail.trim();
    if !stderr.is_empty() {
        let start = stderr.len().saturating_sub(STDERR_IN_TEXT);
        let start = (start..stderr.len())
            .find(|i| stderr.is_char_boundary(*i))
            .unwrap_or(stderr.len());
        out.push_str(&format!(
            "\nThe CLI's stderr ends with:\n{}",
            &stderr[start..]
        ));
    }
    if !r.text.trim().is_empty() {
        out.push_str(&format!("\nPartial answer before the failure:\n{}", r.text));
    }
    out
}

fn usage_line(u: &Usage) -> String {
    let mut s = format!(
        "{} input, {} cache read, {} cache write, {} output tokens",
        u.input, u.cache_read, u.cache_write, u.output
    );
    if let Some(cost) = u.cost_usd {
        s.push_str(&format!(", ${cost:.4}"));
    }
    s
}

/// What the caller can do about each kind of failure.
fn fix(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::InvalidRequest => "correct the argument named above and call again.",
        FailureKind::UnsupportedAgent => "use an agent id the `agents` tool lists.",
        FailureKind::NotInstalled => {
            "install the CLI as shown, then call again; the `agents` tool shows what is installed."
        }
        FailureKind::SpawnFailed => {
            "check that the CLI named above starts from a terminal (a broken install or permissions)."
        }
        FailureKind::ReadOnlyUnavailable => {
            "run `agent-dispatch check` in a terminal: its report names the cause and the fix. Nothing ran unsandboxed."
        }
        FailureKind::NonzeroExit => {
            "the CLI failed; read its error above (login, network, a model or effort it does not accept) and retry."
        }
        FailureKind::Signal => {
            "the CLI was killed by a signal (out of memory, or killed from outside); retry."
        }
        FailureKind::ErrorEnvelope => {
            "the agent's model provider reported the error above; check the CLI's login, quota and model name, then retry."
        }
        FailureKind::MalformedStream => {
            "the CLI's output was not understood; check with the `agents` tool that its version is supported."
        }
        FailureKind::IncompleteStream => {
            "the CLI stopped without a final answer; retry, and check its version with the `agents` tool."
        }
        FailureKind::NotLoggedIn => {
            "log the CLI in as the message says (once, in a terminal), then call again. Nothing ran."
        }
        FailureKind::Timeout => {
            "the agent ran out of time and was stopped; narrow the task, or pass a longer `timeout`."
        }
        FailureKind::BudgetExceeded => {
            "the agent used more tokens than `maxTokens` and was stopped; narrow the task, or raise `maxTokens`."
        }
        FailureKind::Cancelled => {
            "the call was cancelled and the agent's processes were stopped; call again if the answer is still wanted."
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Failure, Identity};

    #[test]
    fn a_failure_names_kind_and_fix_and_keeps_usage() {
        let mut r = DispatchResult::early_failure(
            Identity::default(),
            Failure::new(FailureKind::ErrorEnvelope, "the model refused"),
        );
        r.usage = Some(Usage {
            input: 120,
            output: 40,
            ..Usage::default()
        });
        let t = dispatch(r);
        assert_eq!(t.is_error, Some(true));
        let text = t.content[0].as_text().unwrap().text.clone();
        assert!(
            text.contains("(error-envelope): the model refused"),
            "{text}"
        );
        assert!(text.contains("Fix: "), "{text}");
        assert!(text.contains("120 input"), "{text}");
        let s = t.structured_content.unwrap();
        assert_eq!(s["type"], "result");
        assert_eq!(s["usage"]["input"], 120);
        assert_eq!(s["failure"]["kind"], "error-envelope");
    }
}
