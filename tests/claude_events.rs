//! The Claude stream-json parser over real captures (tests/fixtures/claude, README there) and
//! synthetic edge cases.

use agent_dispatch::adapter::{Adapter, StreamOutcome, Terminal};
use agent_dispatch::adapters::claude::ClaudeAdapter;
use agent_dispatch::contract::{CommandStatus, NoticeLevel, Reported, StreamEvent, Usage};

fn fixture(name: &str) -> String {
    let p = format!(
        "{}/tests/fixtures/claude/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Feed every line; panics on a parse error.
fn run(text: &str) -> (Vec<StreamEvent>, StreamOutcome) {
    let mut p = ClaudeAdapter.parser();
    let mut events = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        events.extend(p.parse_line(line).unwrap_or_else(|e| panic!("{e}: {line}")));
    }
    (events, p.outcome())
}

fn commands(events: &[StreamEvent]) -> Vec<(String, CommandStatus, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Command {
                command,
                status,
                output_tail,
                ..
            } => Some((command.clone(), *status, output_tail.clone())),
            _ => None,
        })
        .collect()
}

fn error_message(o: &StreamOutcome) -> &str {
    match &o.terminal {
        Some(Terminal::Error { message }) => message,
        other => panic!("expected an error terminal, got {other:?}"),
    }
}

#[test]
fn sandboxed_write_denied_then_read_ok() {
    let (events, o) = run(&fixture("scrub0_autoallow_sandbox_erofs.stream.jsonl"));
    assert!(matches!(
        &events[0],
        StreamEvent::Metadata { session_id: Some(_), model: Some(m), effort: None } if m == "claude-opus-5-5"
    ));
    let cmds = commands(&events);
    assert_eq!(cmds.len(), 4, "{cmds:?}");
    assert_eq!(cmds[0].0, "printf x > probe.txt");
    assert_eq!(cmds[0].1, CommandStatus::Started);
    assert_eq!(cmds[1].1, CommandStatus::Failed);
    assert!(
        cmds[1]
            .2
            .as_deref()
            .unwrap()
            .contains("Read-only file system")
    );
    assert_eq!(
        (cmds[3].0.as_str(), cmds[3].1),
        ("echo READ_OK", CommandStatus::Completed)
    );
    assert!(events.contains(&StreamEvent::Done { success: true }));
    assert_eq!(o.terminal, Some(Terminal::Success));
    assert_eq!(o.text, "FAKE_DONE: write attempted, READ_OK seen.");
    assert_eq!(
        o.confirmed.model,
        Reported::Confirmed("claude-opus-5-5".into())
    );
    assert_eq!(o.confirmed.effort, Reported::NotReported);
    let u = o.usage.unwrap();
    assert_eq!(
        (u.input, u.output, u.cache_read, u.cache_write),
        (300, 60, 0, 0)
    );
    assert!((u.cost_usd.unwrap() - 0.0024).abs() < 1e-9);
    assert_eq!(
        o.session_id.as_deref(),
        Some("1edbe878-a8ce-492a-b602-123af2b02749")
    );
}

#[test]
fn permission_layer_denial_is_declined_with_a_notice() {
    let (events, o) = run(&fixture("design_authtoken.stream.jsonl"));
    let cmds = commands(&events);
    assert_eq!(cmds[1].1, CommandStatus::Declined, "{cmds:?}");
    assert!(events.iter().any(|e| matches!(e,
        StreamEvent::Notice { level: NoticeLevel::Info, message } if message.starts_with("Bash was refused: Output redirection")
    )));
    assert_eq!(o.terminal, Some(Terminal::Success));
}

#[test]
fn unknown_model_404_is_a_failure_with_the_cli_message() {
    let (events, o) = run(&fixture("model_nope_server404.stream.jsonl"));
    let msg = error_message(&o);
    assert!(
        msg.contains("There's an issue with the selected model (nope)"),
        "{msg}"
    );
    assert!(msg.contains("HTTP 404"), "{msg}");
    assert!(msg.contains("model_not_found"), "{msg}");
    assert!(events.contains(&StreamEvent::Done { success: false }));
    assert_eq!(o.confirmed.model, Reported::Confirmed("nope".into()));
    assert_eq!(o.usage.unwrap().total_tokens(), 0);
}

#[test]
fn unrecognised_model_on_stderr_is_only_a_warning() {
    let mut p = ClaudeAdapter.parser();
    let line = fixture("model_nope_server_accepts.stderr.txt");
    let n = p.stderr_line(line.trim()).expect("a notice");
    assert!(
        matches!(&n, StreamEvent::Notice { level: NoticeLevel::Warning, message } if message.contains("\"nope\"")),
        "{n:?}"
    );
    assert_eq!(p.stderr_line("some other diagnostic"), None);
    // The run itself succeeded.
    let (_, o) = run(&fixture("model_nope_server_accepts.stream.jsonl"));
    assert_eq!(o.terminal, Some(Terminal::Success));
}

#[test]
fn http_errors_are_failures_whatever_the_subtype() {
    for (name, status, text) in [
        (
            "http400.stream.jsonl",
            "HTTP 400",
            "API Error: 400 fake bad request",
        ),
        (
            "http500_max_retries1.stream.jsonl",
            "HTTP 500",
            "API Error: 500 fake internal server error",
        ),
        (
            "http529_max_retries0.stream.jsonl",
            "HTTP 529",
            "API Error: 529 Overloaded",
        ),
        (
            "auth_none.stream.jsonl",
            "authentication_failed",
            "Not logged in",
        ),
    ] {
        let (_, o) = run(&fixture(name));
        let msg = error_message(&o);
        assert!(msg.contains(status) && msg.contains(text), "{name}: {msg}");
        assert!(o.usage.is_some(), "{name}: usage kept");
    }
}

#[test]
fn retries_are_warnings_and_no_result_means_no_terminal() {
    let (events, o) = run(&fixture(
        "http500_default_retries_killed_at_120s.stream.jsonl",
    ));
    let retries: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Notice {
                level: NoticeLevel::Warning,
                message,
            } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert!(retries.len() >= 9, "{retries:?}");
    assert!(
        retries[0].contains("HTTP 500") && retries[0].contains("retry 1/10"),
        "{}",
        retries[0]
    );
    assert_eq!(o.terminal, None);
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Done { .. })));
}

#[test]
fn sandbox_unavailable_names_what_to_install() {
    let (_, o) = run(&fixture("no_bwrap_scrub0_failifunavailable.stream.jsonl"));
    // Its own terminal kind: the engine reports it as read-only-unavailable, not a model error.
    let Some(Terminal::SandboxUnavailable { message: msg }) = &o.terminal else {
        panic!(
            "expected the sandbox-unavailable terminal, got {:?}",
            o.terminal
        );
    };
    assert!(msg.contains("apt-get install bubblewrap socat"), "{msg}");
    assert!(msg.contains("bubblewrap (bwrap) not installed"), "{msg}");
}

// ---- synthetic ------------------------------------------------------------------------------

fn assistant(id: &str, content: &str, input: u64, output: u64) -> String {
    format!(
        r#"{{"type":"assistant","message":{{"id":"{id}","model":"claude-x","content":[{content}],"usage":{{"input_tokens":{input},"output_tokens":{output},"cache_read_input_tokens":5,"cache_creation_input_tokens":7}}}},"session_id":"s1"}}"#
    )
}

#[test]
fn usage_is_counted_once_per_message_id_without_a_result() {
    let text = [
        r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-x","tools":["Bash","Read"],"mcp_servers":[]}"#.to_owned(),
        assistant("m1", r#"{"type":"text","text":"a"}"#, 100, 1),
        assistant(
            "m1",
            r#"{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/r/README.md"}}"#,
            100,
            20,
        ),
        r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"hello"}]}]}}"#.to_owned(),
        assistant("m2", r#"{"type":"text","text":"answer"}"#, 200, 30),
    ]
    .join("\n");
    let (events, o) = run(&text);
    let totals: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Usage { usage } => Some(usage.output),
            _ => None,
        })
        .collect();
    assert_eq!(totals, [1, 20, 50], "running totals, each message id once");
    let cmds = commands(&events);
    assert_eq!(
        cmds[1],
        (
            "Read /r/README.md".to_owned(),
            CommandStatus::Completed,
            Some("hello".to_owned())
        )
    );
    assert_eq!(o.terminal, None);
    assert_eq!(o.text, "answer");
    assert_eq!(
        o.usage,
        Some(Usage {
            input: 300,
            cache_read: 10,
            cache_write: 14,
            output: 50,
            reasoning: 0,
            cost_usd: None
        })
    );
}

#[test]
fn the_result_event_is_authoritative() {
    let text = [
        assistant("m1", r#"{"type":"text","text":"partial"}"#, 100, 20),
        r#"{"type":"result","subtype":"success","is_error":false,"result":"final","session_id":"s9","total_cost_usd":0.5,"usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3,"cache_creation_input_tokens":4,"output_tokens_details":{"thinking_tokens":1}}}"#.to_owned(),
    ]
    .join("\n");
    let (_, o) = run(&text);
    assert_eq!(o.terminal, Some(Terminal::Success));
    assert_eq!(o.text, "final");
    assert_eq!(
        o.usage,
        Some(Usage {
            input: 1,
            cache_read: 3,
            cache_write: 4,
            output: 2,
            reasoning: 1,
            cost_usd: Some(0.5)
        })
    );
    assert_eq!(o.session_id.as_deref(), Some("s9"));
}

#[test]
fn is_error_wins_over_subtype_success() {
    let (events, o) = run(
        r#"{"type":"result","subtype":"success","is_error":true,"result":"boom","api_error_status":502}"#,
    );
    assert_eq!(error_message(&o), "boom (HTTP 502)");
    assert!(events.contains(&StreamEvent::Done { success: false }));
    assert!(events.contains(&StreamEvent::Error {
        message: "boom (HTTP 502)".into()
    }));
}

#[test]
fn error_subtypes_without_is_error_still_fail() {
    let (_, o) =
        run(r#"{"type":"result","subtype":"error_max_turns","errors":["too many turns"]}"#);
    assert_eq!(error_message(&o), "too many turns");
}

#[test]
fn unknown_types_are_ignored_and_never_complete() {
    let text = r#"{"type":"stream_event","event":{}}
{"type":"system","subtype":"status","status":"compacting"}
{"type":"rate_limit_event","x":1}"#;
    let (events, o) = run(text);
    assert!(events.is_empty());
    assert_eq!(o.terminal, None);
}

#[test]
fn malformed_lines_are_parse_errors() {
    let mut p = ClaudeAdapter.parser();
    assert!(p.parse_line("not json").is_err());
    assert!(p.parse_line("[1,2]").is_err());
    assert!(p.parse_line(r#"{"no":"type"}"#).is_err());
    assert!(
        p.parse_line(r#"{"type":"assistant","message":"not an object"}"#)
            .is_err()
    );
}

#[test]
fn a_disabled_sandbox_stops_the_run() {
    let mut p = ClaudeAdapter.parser();
    let e = p
        .parse_line(r#"{"type":"system","subtype":"init","session_id":"s","model":"m","sandbox_enabled":false}"#)
        .unwrap_err();
    assert!(e.0.contains("sandbox disabled"), "{e}");
}

#[test]
fn long_output_keeps_a_bounded_tail_and_shell_exit_codes() {
    let big = "x".repeat(10_000) + "END";
    let text = [
        assistant(
            "m1",
            r#"{"type":"tool_use","id":"t","name":"Bash","input":{"command":"make"}},{"type":"tool_use","id":"r","name":"Read","input":{"file_path":"/x"}}"#,
            1,
            1,
        ),
        serde_json::json!({"type":"user","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"t","is_error":true,"content":format!("Exit code 2\n{big}")},
            {"type":"tool_result","tool_use_id":"r","is_error":false,"content":"1\tfile"}]}})
        .to_string(),
    ]
    .join("\n");
    let (events, _) = run(&text);
    // Usage events (the running totals budgets watch) are not what this test is about.
    let events: Vec<_> = events
        .into_iter()
        .filter(|e| !matches!(e, StreamEvent::Usage { .. }))
        .collect();
    match &events[2] {
        StreamEvent::Command {
            command,
            status,
            exit_code,
            output_tail: Some(t),
            ..
        } => {
            assert_eq!(command, "make");
            assert_eq!(*status, CommandStatus::Failed);
            assert_eq!(*exit_code, Some(2));
            assert!(t.len() <= 4096 && t.ends_with("END"));
        }
        other => panic!("{other:?}"),
    }
    match &events[3] {
        StreamEvent::Command {
            command,
            status,
            exit_code,
            ..
        } => {
            assert_eq!(command, "Read /x");
            assert_eq!(*status, CommandStatus::Completed);
            assert_eq!(*exit_code, None, "the Read tool has no exit code");
        }
        other => panic!("{other:?}"),
    }
}
