//! The Codex parser and catalogue readers over real captures (`tests/fixtures/codex`, see its
//! README): every capture parses to the expected events and outcome.

use std::path::PathBuf;

use agent_dispatch::adapter::{Adapter, StreamOutcome, Terminal};
use agent_dispatch::adapters::codex::CodexAdapter;
use agent_dispatch::adapters::codex::catalogue::{self, Catalogue, DoctorModel};
use agent_dispatch::contract::{CommandStatus, NoticeLevel, Reported, StreamEvent, Usage};

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/codex")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Parse a whole capture (stdout, then stderr lines) with a fresh parser.
fn parse(stem: &str) -> (Vec<StreamEvent>, StreamOutcome) {
    let mut p = CodexAdapter.parser();
    let mut events = Vec::new();
    for line in fixture(&format!("{stem}.jsonl")).lines() {
        events.extend(
            p.parse_line(line)
                .unwrap_or_else(|e| panic!("{stem}: {e}: {line}")),
        );
    }
    for line in fixture(&format!("{stem}.stderr.txt")).lines() {
        events.extend(p.stderr_line(line));
    }
    (events, p.outcome())
}

fn commands(events: &[StreamEvent]) -> Vec<(CommandStatus, Option<i64>, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Command {
                status,
                exit_code,
                output_tail,
                ..
            } => Some((*status, *exit_code, output_tail.clone().unwrap_or_default())),
            _ => None,
        })
        .collect()
}

fn notices(events: &[StreamEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Notice {
                level: NoticeLevel::Warning,
                message,
            } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn error_of(o: &StreamOutcome) -> String {
    match &o.terminal {
        Some(Terminal::Error { message }) => message.clone(),
        other => panic!("expected an error terminal, got {other:?}"),
    }
}

const FAKE_USAGE: Usage = Usage {
    input: 303 - 30,
    cache_read: 30,
    cache_write: 0,
    output: 63,
    reasoning: 15,
    cost_usd: None,
};

fn assert_success(stem: &str, o: &StreamOutcome, events: &[StreamEvent]) {
    assert_eq!(o.terminal, Some(Terminal::Success), "{stem}");
    assert!(o.text.starts_with("FAKE_DONE."), "{stem}: {}", o.text);
    assert_eq!(o.usage, Some(FAKE_USAGE), "{stem}");
    assert!(o.session_id.is_some(), "{stem}");
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Done { success: true }),
        "{stem}"
    );
    assert_eq!(o.confirmed.model, Reported::NotReported);
    assert_eq!(o.confirmed.effort, Reported::NotReported);
}

#[test]
fn read_only_run_shows_the_denied_write_and_the_read() {
    let (events, o) = parse("01-readonly-known-model");
    assert_success("01", &o, &events);
    assert_eq!(
        events[0],
        StreamEvent::Metadata {
            session_id: Some("01a22978-dc2e-79c0-9ac2-d1017741e426".into()),
            model: None,
            effort: None
        }
    );
    let cmds = commands(&events);
    assert_eq!(cmds.len(), 4, "started + completed for two commands");
    assert_eq!(cmds[0].0, CommandStatus::Started);
    assert_eq!(cmds[1].0, CommandStatus::Failed);
    assert_eq!(cmds[1].1, Some(1));
    assert!(cmds[1].2.contains("probe.txt: Read-only file system"));
    assert_eq!(cmds[3].0, CommandStatus::Completed);
    assert!(cmds[3].2.ends_with("READ_OK\n"));
    assert!(notices(&events).is_empty());
}

#[test]
fn unknown_model_metadata_warning_is_a_notice_not_a_failure() {
    let (events, o) = parse("02-readonly-unknown-model");
    assert_success("02", &o, &events);
    let n = notices(&events);
    assert_eq!(n.len(), 1);
    assert!(n[0].starts_with("Model metadata for `nope` not found"));
}

#[test]
fn control_and_piped_runs_succeed() {
    let (events, o) = parse("03-workspace-write-control");
    assert_success("03", &o, &events);
    assert_eq!(commands(&events)[1].0, CommandStatus::Completed);
    let (events, o) = parse("04-stdin-piped");
    assert_success("04", &o, &events);
}

#[test]
fn failures_are_error_envelopes_and_retries_are_notices() {
    for (stem, retries, message) in [
        (
            "05-response-failed",
            5,
            "stream disconnected before completion: fake upstream failure",
        ),
        (
            "06-http500-no-retries",
            0,
            "We’re currently experiencing high demand, which may cause temporary errors.",
        ),
        (
            "07-http500-default-retries",
            5,
            "We’re currently experiencing high demand, which may cause temporary errors.",
        ),
        (
            "08-http400",
            0,
            "fake bad request: model 'nope' does not exist",
        ),
        (
            "09-conn-refused-bounded",
            0,
            "Connection failed: error sending request",
        ),
        (
            "12-missing-env-key",
            0,
            "Missing environment variable: `FAKE_KEY`.",
        ),
    ] {
        let (events, o) = parse(stem);
        assert_eq!(error_of(&o), message, "{stem}");
        assert_eq!(
            o.usage, None,
            "{stem}: codex reports usage only on turn.completed"
        );
        let n = notices(&events);
        let reconnects = n.iter().filter(|m| m.starts_with("Reconnecting")).count();
        assert_eq!(reconnects, retries, "{stem}: {n:?}");
        assert_eq!(
            events[events.len() - 2..],
            [
                StreamEvent::Error {
                    message: message.into()
                },
                StreamEvent::Done { success: false }
            ],
            "{stem}"
        );
    }
}

#[test]
fn endless_retries_never_establish_completion() {
    let (events, o) = parse("10-conn-refused-default-unbounded");
    assert_eq!(o.terminal, None);
    assert_eq!(o.usage, None);
    assert!(o.session_id.is_some());
    assert_eq!(notices(&events).len(), 4);
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Done { .. })));
}

#[test]
fn first_command_without_item_events_still_parses() {
    let (events, o) = parse("11-openai-base-url-ws-fallback");
    assert_success("11", &o, &events);
    let cmds = commands(&events);
    assert_eq!(cmds.len(), 2, "only the second command has items: {cmds:?}");
    assert!(cmds[1].2.contains("READ_OK"));
    // The denied first command is visible only in the final text, which quotes the tool outputs.
    assert!(o.text.contains("Read-only file system"));
    let n = notices(&events);
    assert_eq!(n.len(), 5);
    assert!(n[4].starts_with("Falling back from WebSockets"));
}

#[test]
fn startup_error_prints_nothing_on_stdout() {
    let (events, o) = parse("13-legacy-profile-key");
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(o.terminal, None);
    assert!(fixture("13-legacy-profile-key.stderr.txt").contains("legacy `profile"));
}

#[test]
fn real_catalogue_parses_in_codex_order() {
    let c = Catalogue::parse(fixture("debug-models.json").as_bytes()).unwrap();
    assert_eq!(c.entries.len(), 14);
    let d = c.default_model().unwrap();
    assert_eq!(d.slug, "gpt-6.2-sol");
    assert_eq!(d.default_effort.as_deref(), Some("low"));
    let g = c.find("gpt-5.5").unwrap();
    assert_eq!(g.efforts, ["low", "medium", "high", "xhigh"]);
    assert!(!g.hidden);
    assert!(c.find("codex-auto-review").unwrap().hidden);
    // Sorted by priority: gpt-6.1-sol (4) comes before gpt-6-astra (5) although printed after it.
    let order: Vec<_> = c.entries.iter().map(|e| e.info.slug.as_str()).collect();
    let pos = |s: &str| order.iter().position(|x| *x == s).unwrap();
    assert!(pos("gpt-6.1-sol") < pos("gpt-6-astra"));
    assert!(c.check_model("nope").is_err());
    assert!(catalogue::check_effort(g, "max", "requested").is_err());
}

#[test]
fn real_doctor_reports_are_read_even_when_failing() {
    assert_eq!(
        catalogue::parse_doctor(fixture("doctor-offline-noauth.json").as_bytes()),
        Ok(DoctorModel::Default)
    );
    assert_eq!(
        catalogue::parse_doctor(fixture("doctor-fakeprovider.json").as_bytes()),
        Ok(DoctorModel::Configured("gpt-5.5".into()))
    );
}
