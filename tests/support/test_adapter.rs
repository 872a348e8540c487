//! An adapter of the tests' own over `tests/fake-cli/codex`, so the engine is tested apart from
//! any real adapter. Its parser is deliberately small: it understands just enough of the codex
//! stream shape the fake writes.
#![allow(dead_code)]

use std::ffi::OsString;

use agent_dispatch::adapter::{
    Adapter, Capabilities, LaunchContext, ParseError, StreamOutcome, StreamParser, Terminal,
};
use agent_dispatch::contract::{Failure, Reported, StreamEvent, Usage};
use agent_dispatch::launch::{Launch, prompt_transport};
use async_trait::async_trait;
use serde_json::Value;

pub struct TestAdapter;

pub static TEST_ADAPTER: TestAdapter = TestAdapter;

#[async_trait]
impl Adapter for TestAdapter {
    fn id(&self) -> &'static str {
        "test"
    }
    fn display_name(&self) -> &'static str {
        "Test"
    }
    fn program(&self) -> &'static str {
        "codex"
    }
    fn install_hint(&self) -> &'static str {
        "it is in tests/fake-cli"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            read_only_enforced: true,
            model_catalogue: false,
            reports_model: false,
            reports_effort: false,
            efforts: vec![],
            usage_reports: agent_dispatch::adapter::UsageReports::PerTurn,
            read_only_by: agent_dispatch::adapter::ReadOnlyBy::CliSandbox,
        }
    }
    fn launch(&self, ctx: &LaunchContext<'_>) -> Result<Launch, Failure> {
        let mut args: Vec<OsString> = vec!["exec".into(), "--json".into()];
        let (prompt_args, stdin) = prompt_transport(ctx.prompt);
        args.extend(prompt_args);
        Ok(Launch {
            program: ctx.program.to_path_buf(),
            args,
            cwd: ctx.cwd.to_path_buf(),
            env: agent_dispatch::env::allowlisted(ctx.parent_env, &["FAKE_*"], &[]),
            stdin,
            wall: None,
        })
    }
    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(TestParser::default())
    }
}

#[derive(Default)]
pub struct TestParser {
    text: String,
    usage: Option<Usage>,
    session: Option<String>,
    terminal: Option<Terminal>,
}

impl StreamParser for TestParser {
    fn parse_line(&mut self, line: &str) -> Result<Vec<StreamEvent>, ParseError> {
        if line.contains("PANIC_PARSER") {
            panic!("parser panic requested by the stream");
        }
        let v: Value = serde_json::from_str(line).map_err(|e| ParseError(e.to_string()))?;
        let ty = v["type"]
            .as_str()
            .ok_or_else(|| ParseError("no type".into()))?;
        Ok(match ty {
            "thread.started" => {
                self.session = v["thread_id"].as_str().map(str::to_owned);
                vec![StreamEvent::Metadata {
                    session_id: self.session.clone(),
                    model: None,
                    effort: None,
                }]
            }
            "item.completed" if v["item"]["type"] == "agent_message" => {
                self.text = v["item"]["text"].as_str().unwrap_or_default().to_owned();
                vec![StreamEvent::Text {
                    text: self.text.clone(),
                }]
            }
            "turn.completed" => {
                let u = &v["usage"];
                let n = |k: &str| u[k].as_u64().unwrap_or(0);
                self.usage = Some(Usage {
                    input: n("input_tokens") - n("cached_input_tokens"),
                    cache_read: n("cached_input_tokens"),
                    cache_write: n("cache_write_input_tokens"),
                    output: n("output_tokens"),
                    reasoning: n("reasoning_output_tokens"),
                    cost_usd: None,
                });
                self.terminal = Some(Terminal::Success);
                vec![StreamEvent::Done { success: true }]
            }
            "turn.failed" => {
                let message = v["error"]["message"].as_str().unwrap_or("?").to_owned();
                self.terminal = Some(Terminal::Error {
                    message: message.clone(),
                });
                vec![StreamEvent::Error { message }]
            }
            _ => vec![],
        })
    }

    fn outcome(&self) -> StreamOutcome {
        let mut o = StreamOutcome {
            text: self.text.clone(),
            usage: self.usage,
            session_id: self.session.clone(),
            terminal: self.terminal.clone(),
            ..Default::default()
        };
        o.confirmed.model = Reported::NotReported;
        o.confirmed.effort = Reported::NotReported;
        o
    }
}
