//! The protocol's JSON Schema (docs/protocol.schema.json) against real output: the binary's
//! lines for bad input, and every line a real run through the runner produces.

mod support;
#[path = "support/test_adapter.rs"]
mod test_adapter;

use std::process::Command;

use agent_dispatch::contract::Identity;
use agent_dispatch::contract::StreamEvent;
use agent_dispatch::dispatch::{DispatchOptions, dispatch_valid};
use agent_dispatch::protocol::Line;
use agent_dispatch::request::ValidRequest;
use agent_dispatch::supervise::Supervisor;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(support::repo_root().join("docs/protocol.schema.json")).unwrap(),
    )
    .unwrap();
    jsonschema::validator_for(&schema).expect("the schema itself is valid")
}

fn assert_valid(v: &jsonschema::Validator, line: &str) {
    let json: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let errors: Vec<String> = v.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{line}\n{errors:#?}");
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_agent-dispatch"))
}

#[test]
fn bad_input_yields_one_valid_result_line_and_exit_1() {
    let v = validator();
    for args in [
        vec!["run", "--agent", "nope", "--", "task"],
        vec!["run", "--agent", "codex", "--", "  "],
        vec!["run", "--agent", "codex", "--model", "-x", "--", "t"],
        vec!["run", "--agent", "codex", "--effort=--high", "--", "t"],
        vec!["run", "--agent", "codex", "--model", "", "--", "t"],
        vec!["run", "--agent", "codex", "--model", "a\nb", "--", "t"],
        vec![
            "run",
            "--agent",
            "codex",
            "--cwd",
            "/etc/hostname",
            "--",
            "t",
        ],
        vec!["run", "--agent", "codex"],
        vec![
            "run",
            "--agent",
            "codex",
            "--cwd",
            "/nonexistent/dir",
            "--",
            "t",
        ],
        vec![
            "run",
            "--agent",
            "codex",
            "--task-file",
            "/nonexistent/file",
        ],
    ] {
        let out = bin().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {stdout}");
        assert_valid(&v, lines[0]);
        let r: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(r["type"], "result");
        let kind = r["failure"]["kind"].as_str().unwrap();
        assert!(
            matches!(kind, "invalid-request" | "unsupported-agent"),
            "{kind}"
        );
    }
}

#[test]
fn a_usage_error_exits_2_without_jsonl() {
    let out = bin().args(["run", "--no-such-flag"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[tokio::test]
async fn every_line_of_real_runs_matches_the_schema() {
    let v = validator();
    for scenario in [
        "ok",
        "error-envelope",
        "nonzero-exit",
        "no-terminal",
        "byte-split",
    ] {
        let tag = support::unique_tag("schema");
        let req = ValidRequest {
            adapter: &test_adapter::TEST_ADAPTER,
            task: format!("SCENARIO:{scenario}"),
            scope: Some("src/".into()),
            model: Some("m".into()),
            effort: None,
            cwd: std::env::temp_dir(),
        };
        let opts = DispatchOptions {
            parent_env: support::env_with_fake_path(&tag),
            endpoint: None,
            gate: agent_dispatch::readonly::gate::GatePolicy::Bypass,
            limits: Default::default(),
        };
        let mut lines = vec![Line::started(
            Identity::requested("test", Some("m"), None),
            "/bin/x".into(),
            "/".into(),
        )];
        let mut sink = |e: StreamEvent| lines.push(Line::event(e));
        let result = dispatch_valid(
            &req,
            &opts,
            &Supervisor::new(),
            CancellationToken::new(),
            &mut sink,
        )
        .await;
        lines.push(Line::result(result));
        for line in &lines {
            assert_valid(&v, &serde_json::to_string(line).unwrap());
        }
    }
}
