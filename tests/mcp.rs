//! `agent-dispatch mcp` through a real MCP client (rmcp's), against the built binary with the
//! fake codex CLI behind the real Codex adapter: the handshake in both protocol revisions, the
//! tool list, a call with progress and a structured result, a failure as an error result with
//! usage, cancellation, shutdown on stdin EOF and SIGTERM, parallel calls and the roots
//! boundary. Every run gets its own working directory, so /proc shows whether any process of
//! it survives.

mod mcp_support;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use mcp_support::support::{live_in_dir, run_dir};
use mcp_support::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rmcp::model::ProtocolVersion;
use serde_json::{Value, json};

const VERSIONS: [ProtocolVersion; 2] =
    [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25];

fn dispatch_args(dir: &std::path::Path, task: &str) -> Value {
    json!({ "agent": "codex", "task": task, "cwd": dir })
}

/// Wait (bounded) until no process runs in `dir`; fail naming the survivors.
async fn assert_tree_gone(dir: &std::path::Path, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let live = live_in_dir(dir);
        if live.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes of the dispatch survive: {live:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The fake CLI and its grandchild both run in `dir`.
fn assert_running(dir: &std::path::Path) {
    let live = live_in_dir(dir);
    assert!(live.len() >= 2, "expected the CLI and its child: {live:?}");
}

fn is_running_command(m: &str) -> bool {
    m.starts_with("codex: running ")
}

/// Wait (bounded) for the server process to exit; its exit code.
async fn exit_code(session: &mut Session) -> i32 {
    let status = tokio::time::timeout(Duration::from_secs(10), session.child.wait())
        .await
        .expect("the server exits within 10 s")
        .unwrap();
    status.code().unwrap_or(-1)
}

#[tokio::test]
async fn initialize_negotiates_both_revisions_and_lists_the_registry_tools() {
    let dir = run_dir("mcp-init");
    for version in VERSIONS {
        let s = Session::start(dir.path(), Host::new(version.clone())).await;
        let info = s.client.peer_info().expect("server info");
        assert_eq!(info.protocol_version, version);
        assert_eq!(info.server_info.as_ref().unwrap().name, "agent-dispatch");
        assert!(info.capabilities.tools.is_some());

        let tools = s.client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["dispatch", "agents", "models"]);
        let dispatch = &tools[0];
        let ids: Vec<&str> = agent_dispatch::adapters::registry()
            .iter()
            .map(|a| a.id())
            .collect();
        assert_eq!(
            dispatch.input_schema["properties"]["agent"]["enum"],
            json!(ids)
        );
        assert_eq!(dispatch.input_schema["required"], json!(["agent", "task"]));
        let out = dispatch.output_schema.as_ref().expect("an output schema");
        assert_eq!(out["type"], "object");
        let d = dispatch.description.as_deref().unwrap();
        for needle in ["read-only", "Blocking", "tokens"] {
            assert!(d.contains(needle), "description lacks {needle:?}: {d}");
        }
        let ann = dispatch.annotations.as_ref().unwrap();
        assert_eq!(ann.read_only_hint, Some(true));
        assert_eq!(ann.destructive_hint, Some(false));
    }
}

#[tokio::test]
async fn a_dispatch_answers_with_progress_and_the_protocol_result() {
    let dir = run_dir("mcp-ok");
    // No cwd argument: the dispatch runs in the server's working directory.
    let s = Session::start(dir.path(), Host::new(ProtocolVersion::V_2025_11_25)).await;
    let tools = s.client.list_all_tools().await.unwrap();
    let (r, progress) = s
        .call(
            "dispatch",
            json!({ "agent": "codex", "task": "SCENARIO:work-then-answer", "scope": "the diff" }),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(text(&r), "FAKE_ANSWER: looks fine.");
    let sc = r.structured_content.as_ref().expect("structuredContent");
    assert_eq!(sc["type"], "result");
    assert_eq!(sc["ok"], true);
    assert_eq!(sc["text"], "FAKE_ANSWER: looks fine.");
    assert_eq!(sc["usage"]["input"], 95);
    assert_eq!(sc["usage"]["output"], 40);
    assert_eq!(sc["identity"]["agent"], "codex");
    assert_eq!(sc["checkBypassed"], true);
    assert!(
        sc["sessionId"]
            .as_str()
            .unwrap()
            .starts_with("fake-thread-")
    );
    // The structured result satisfies the tool's own output schema.
    let schema = Value::Object((*tools[0].output_schema.clone().unwrap()).clone());
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(sc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");

    let messages: Vec<&str> = progress
        .iter()
        .map(|p| p.message.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(messages.first(), Some(&"codex: started"), "{messages:?}");
    assert!(
        messages.iter().any(|m| is_running_command(m)),
        "the agent's command shows as progress: {messages:?}"
    );
    let values: Vec<f64> = progress.iter().map(|p| p.progress).collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "progress increases: {values:?}"
    );
    // Only the server itself still runs in the directory.
    let live = live_in_dir(dir.path());
    assert_eq!(live, [s.pid()], "processes of the dispatch survive");
}

#[tokio::test]
async fn a_failed_dispatch_is_an_error_result_that_keeps_usage() {
    let dir = run_dir("mcp-fail");
    let s = Session::start(dir.path(), Host::new(ProtocolVersion::V_2025_06_18)).await;
    let (r, _) = s
        .call(
            "dispatch",
            dispatch_args(dir.path(), "SCENARIO:nonzero-exit"),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(t.contains("(nonzero-exit)"), "names the kind: {t}");
    assert!(t.contains("\nFix: "), "names the fix: {t}");
    assert!(t.contains("Usage so far: 95 input"), "keeps usage: {t}");
    assert!(t.contains("fatal: boom"), "carries the CLI's stderr: {t}");
    let sc = r.structured_content.as_ref().unwrap();
    assert_eq!(sc["ok"], false);
    assert_eq!(sc["failure"]["kind"], "nonzero-exit");
    assert_eq!(sc["usage"]["input"], 95);
    assert_eq!(sc["exit"]["code"], 3);

    // Bad input is a typed error result too, never a JSON-RPC error, and starts nothing.
    let (r, _) = s
        .call("dispatch", json!({ "agent": "no-such-agent", "task": "x" }))
        .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(
        r.structured_content.as_ref().unwrap()["failure"]["kind"],
        "unsupported-agent"
    );
    let (r, _) = s.call("dispatch", json!({ "agent": "codex" })).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("(invalid-request)"), "{}", text(&r));
}

#[tokio::test]
async fn cancelling_a_call_ends_its_whole_tree_and_the_server_carries_on() {
    let dir = run_dir("mcp-cancel");
    let home = run_dir("mcp-server");
    let s = Session::start(home.path(), Host::new(ProtocolVersion::V_2025_11_25)).await;
    let handle = s
        .start_call("dispatch", dispatch_args(dir.path(), "SCENARIO:sleep"))
        .await;
    let token = handle.progress_token.clone();
    s.host
        .wait_progress(&token, "for the agent's command", is_running_command)
        .await;
    assert_running(dir.path());
    // While the agent "thinks", heartbeats keep a host's idle timeout from firing.
    let beat = s
        .host
        .wait_progress(&token, "heartbeat", |m| m.contains("working ("))
        .await;
    assert!(beat.message.unwrap().starts_with("codex: working ("));

    let t = Instant::now();
    handle.cancel(Some("test".into())).await.unwrap();
    assert_tree_gone(dir.path(), Duration::from_secs(3)).await;
    let gone_after = t.elapsed();
    assert!(gone_after < Duration::from_secs(3), "{gone_after:?}");

    // The session is intact: another call works.
    let (r, _) = s
        .call("dispatch", dispatch_args(dir.path(), "SCENARIO:ok"))
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
}

#[tokio::test]
async fn stdin_eof_stops_every_dispatch_and_the_server() {
    let dir = run_dir("mcp-eof");
    let mut s = Session::start(dir.path(), Host::new(ProtocolVersion::V_2025_11_25)).await;
    let handle = s
        .start_call("dispatch", dispatch_args(dir.path(), "SCENARIO:sleep"))
        .await;
    s.host
        .wait_progress(
            &handle.progress_token,
            "for the command",
            is_running_command,
        )
        .await;
    assert_running(dir.path());
    let t = Instant::now();
    // The host goes away: its end of the server's stdin closes.
    s.client.close().await.unwrap();
    assert_eq!(exit_code(&mut s).await, 0);
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    assert_tree_gone(dir.path(), Duration::from_millis(100)).await;
}

#[tokio::test]
async fn sigterm_stops_every_dispatch_and_the_server() {
    let dir = run_dir("mcp-term");
    let mut s = Session::start(dir.path(), Host::new(ProtocolVersion::V_2025_11_25)).await;
    let handle = s
        .start_call(
            "dispatch",
            dispatch_args(dir.path(), "SCENARIO:ignore-term"),
        )
        .await;
    s.host
        .wait_progress(&handle.progress_token, "for the start", |m| {
            m == "codex: started"
        })
        .await;
    // The SIGTERM-ignoring CLI and its child are up once both run in the directory.
    let deadline = Instant::now() + Duration::from_secs(10);
    while live_in_dir(dir.path()).len() < 2 {
        assert!(Instant::now() < deadline, "the fake CLI did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    kill(Pid::from_raw(s.pid()), Signal::SIGTERM).unwrap();
    assert_eq!(exit_code(&mut s).await, 0);
    // Even a tree that ignores SIGTERM is gone once the server has exited (SIGKILL after
    // the grace period).
    assert_tree_gone(dir.path(), Duration::from_millis(100)).await;
}

#[tokio::test]
async fn parallel_calls_are_independent() {
    let slow = run_dir("mcp-par-slow");
    let quick = run_dir("mcp-par-quick");
    let home = run_dir("mcp-server");
    let s = Session::start(home.path(), Host::new(ProtocolVersion::V_2025_11_25)).await;
    let long = s
        .start_call("dispatch", dispatch_args(slow.path(), "SCENARIO:sleep"))
        .await;
    s.host
        .wait_progress(&long.progress_token, "for the command", is_running_command)
        .await;
    // A second call completes while the first still runs.
    let (r, _) = s
        .call("dispatch", dispatch_args(quick.path(), "SCENARIO:ok"))
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_running(slow.path());
    // Cancelling the first leaves nothing of it, and did not disturb the second.
    long.cancel(None).await.unwrap();
    assert_tree_gone(slow.path(), Duration::from_secs(3)).await;
    assert_tree_gone(quick.path(), Duration::from_millis(100)).await;
}

#[tokio::test]
async fn a_cwd_outside_the_clients_roots_is_refused_and_starts_nothing() {
    let root = run_dir("mcp-root");
    let outside = run_dir("mcp-outside");
    let log = root.path().join("fake-cli.log");
    let mut cmd = server_command(root.path());
    cmd.env("FAKE_CLI_LOG", &log);
    let host = Host::new(ProtocolVersion::V_2025_11_25).with_roots(vec![root.path().into()]);
    let s = Session::start_with(cmd, host).await;

    let (r, _) = s
        .call("dispatch", dispatch_args(outside.path(), "SCENARIO:ok"))
        .await;
    assert_eq!(r.is_error, Some(true));
    let sc = r.structured_content.as_ref().unwrap();
    assert_eq!(sc["failure"]["kind"], "invalid-request");
    assert!(
        text(&r).contains("outside every root"),
        "names the reason: {}",
        text(&r)
    );
    assert!(!log.exists(), "nothing was started");

    let (r, _) = s
        .call("dispatch", dispatch_args(root.path(), "SCENARIO:ok"))
        .await;
    assert_eq!(
        r.is_error,
        Some(false),
        "inside a root it runs: {}",
        text(&r)
    );
}

#[tokio::test]
async fn agents_and_models_give_the_same_data_as_the_cli_json() {
    let dir = run_dir("mcp-lists");
    let s = Session::start(dir.path(), Host::new(ProtocolVersion::V_2025_11_25)).await;
    // The CLI faces, with the same fake CLIs on PATH.
    let cli = |args: &[&str]| -> Value {
        let mut c = server_command(dir.path());
        let c = c.as_std_mut();
        let out = std::process::Command::new(c.get_program())
            .args(args)
            .envs(c.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (r, _) = s.call("agents", json!({})).await;
    assert_eq!(r.is_error, Some(false));
    assert_eq!(
        r.structured_content.as_ref().unwrap()["agents"],
        cli(&["agents", "--json"])
    );
    let (r, _) = s.call("models", json!({ "agent": "codex" })).await;
    assert_eq!(r.is_error, Some(false));
    assert_eq!(
        r.structured_content.as_ref().unwrap(),
        &cli(&["models", "codex", "--json"])
    );
    let (r, _) = s.call("models", json!({ "agent": "nope" })).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("unknown agent"), "{}", text(&r));
}

/// Read raw stdout: every line the server writes is a JSON-RPC 2.0 message, progress included.
#[test]
fn stdout_carries_nothing_but_protocol_messages() {
    let dir = run_dir("mcp-raw");
    let mut child = server_command(dir.path()).as_std_mut().spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let send = |stdin: &mut std::process::ChildStdin, v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        &mut stdin,
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}),
    );
    send(
        &mut stdin,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    );
    send(
        &mut stdin,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
            "name":"dispatch","arguments":{"agent":"codex","task":"SCENARIO:work-then-answer"},
            "_meta":{"progressToken":"p1"}}}),
    );
    let mut lines = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "stdout closed early");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line:?}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        let done = v["id"] == 2;
        lines.push(v);
        if done {
            break;
        }
    }
    let progress: Vec<&Value> = lines
        .iter()
        .filter(|v| v["method"] == "notifications/progress")
        .collect();
    assert!(!progress.is_empty());
    assert!(
        progress
            .iter()
            .all(|p| p["params"]["progressToken"] == "p1")
    );
    assert_eq!(lines.last().unwrap()["result"]["isError"], false);
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[tokio::test]
async fn a_flood_of_agent_events_becomes_at_most_ten_progress_messages_a_second() {
    let dir = run_dir("mcp-flood");
    let home = run_dir("mcp-server");
    let s = Session::start(home.path(), Host::new(ProtocolVersion::V_2025_11_25)).await;
    let t = Instant::now();
    // About 24,000 reasoning events.
    let (r, progress) = s
        .call(
            "dispatch",
            dispatch_args(dir.path(), "SCENARIO:stream-mb-20"),
        )
        .await;
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert!(
        progress.iter().any(|p| p
            .message
            .as_deref()
            .is_some_and(|m| m.starts_with("codex: thinking: rrr"))),
        "the events show: {:?}",
        progress.first()
    );
    let allowed = (secs * 10.0).ceil() as usize + 2;
    assert!(
        progress.len() <= allowed,
        "{} progress messages in {secs:.2} s",
        progress.len()
    );
}

/// A client asking for a revision newer than this server speaks is answered with the newest
/// one it does (the client then decides); the oldest handshake revision is accepted as asked.
#[test]
fn the_handshake_answers_a_newer_revision_with_the_newest_supported() {
    let dir = run_dir("mcp-versions");
    for (asked, answered) in [
        ("2026-07-28", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
        ("2024-11-05", "2024-11-05"),
    ] {
        let mut child = server_command(dir.path()).as_std_mut().spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion": asked,"capabilities":{},"clientInfo":{"name":"raw","version":"0"}}});
        writeln!(stdin, "{init}").unwrap();
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            v["result"]["protocolVersion"], answered,
            "asked {asked}: {line}"
        );
        drop(stdin);
        assert!(child.wait().unwrap().success());
    }
}

#[tokio::test]
async fn a_call_timeout_stops_the_agent_and_says_so() {
    let dir = run_dir("mcp-timeout");
    let home = run_dir("mcp-server");
    let s = Session::start(home.path(), Host::new(ProtocolVersion::V_2025_11_25)).await;
    let t = Instant::now();
    let (r, _) = s
        .call(
            "dispatch",
            json!({ "agent": "codex", "task": "SCENARIO:sleep", "cwd": dir.path(), "timeout": "1s" }),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    let sc = r.structured_content.as_ref().unwrap();
    assert_eq!(sc["failure"]["kind"], "timeout", "{}", text(&r));
    assert!(
        text(&r).contains("`timeout`"),
        "the fix names the argument: {}",
        text(&r)
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_tree_gone(dir.path(), Duration::from_secs(1)).await;

    let (r, _) = s
        .call(
            "dispatch",
            json!({ "agent": "codex", "task": "SCENARIO:ok", "cwd": dir.path(), "timeout": "soon" }),
        )
        .await;
    assert_eq!(
        r.structured_content.as_ref().unwrap()["failure"]["kind"],
        "invalid-request",
        "{}",
        text(&r)
    );
}
