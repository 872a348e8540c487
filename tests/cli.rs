//! The binary as a caller meets it: `agent-dispatch run` with the fake codex CLI behind the real
//! Codex adapter. Cancellation by SIGTERM, by the lifeline, and by the death of the dispatcher's
//! own parent; every case reads /proc to prove that no process of the run survives.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;
use support::*;

const SKIP: (&str, &str) = ("AGENT_DISPATCH_SKIP_CHECK", "yes-skip-the-read-only-check");

fn codex_home() -> std::path::PathBuf {
    // Outside the temp dir (Codex's sandbox breaks there), empty: no user config.
    let d = repo_root().join(".cache/cli-test-codex-home");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn dispatcher(tag: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agent-dispatch"));
    c.args(args)
        .env(
            "PATH",
            format!(
                "{}:{}",
                fake_cli_dir().display(),
                std::env::var("PATH").unwrap()
            ),
        )
        .env("CODEX_HOME", codex_home())
        .env("FAKE_RUN_TAG", tag)
        .env(SKIP.0, SKIP.1)
        .stdout(Stdio::piped());
    c
}

/// Read protocol lines until one matches `pred`; returns all lines read.
fn read_until(out: &mut BufReader<ChildStdout>, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            return seen;
        }
        let v: Value = serde_json::from_str(&line).unwrap();
        let hit = pred(&v);
        seen.push(v);
        if hit {
            return seen;
        }
    }
}

fn is_first_event(v: &Value) -> bool {
    v["type"] == "event" && v["event"]["type"] == "metadata"
}

fn finish(mut child: Child, out: &mut BufReader<ChildStdout>) -> (Value, i32) {
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    let last = rest.lines().last().expect("a result line");
    (
        serde_json::from_str(last).unwrap(),
        status.code().unwrap_or(-1),
    )
}

fn assert_no_survivors(tag: &str) {
    let live = live_tagged(tag);
    assert!(
        live.is_empty(),
        "processes of the dispatch survive: {live:?}"
    );
}

#[test]
fn a_successful_run_streams_started_events_and_one_result() {
    let tag = unique_tag("cli-ok");
    let out = dispatcher(
        &tag,
        &[
            "run",
            "--agent",
            "codex",
            "--scope",
            "the diff",
            "--",
            "SCENARIO:ok",
        ],
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "started");
    assert!(
        lines[1..lines.len() - 1]
            .iter()
            .all(|l| l["type"] == "event")
    );
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["ok"], true);
    assert_eq!(result["text"], "FAKE_ANSWER: looks fine.");
    assert_eq!(
        result["checkBypassed"], true,
        "the bypass is visible in the result"
    );
    assert_eq!(lines.iter().filter(|l| l["type"] == "result").count(), 1);
    assert_no_survivors(&tag);
}

#[test]
fn a_mistyped_bypass_is_an_error_not_a_bypass() {
    let tag = unique_tag("cli-bypass");
    let out = dispatcher(&tag, &["run", "--agent", "codex", "--", "SCENARIO:ok"])
        .env(SKIP.0, "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r: Value = serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
    assert_eq!(r["failure"]["kind"], "invalid-request");
    assert!(live_tagged(&tag).is_empty());
}

#[test]
fn sigterm_to_the_dispatcher_cancels_and_still_writes_the_result() {
    let tag = unique_tag("cli-term");
    let mut child = dispatcher(&tag, &["run", "--agent", "codex", "--", "SCENARIO:sleep"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    read_until(&mut out, is_first_event);
    let t = Instant::now();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let (result, code) = finish(child, &mut out);
    assert_eq!(code, 1);
    assert_eq!(result["failure"]["kind"], "cancelled");
    assert!(
        result["sessionId"].is_string(),
        "what was parsed before the cancel is kept"
    );
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert_no_survivors(&tag);
}

#[test]
fn lifeline_eof_cancels_the_dispatch() {
    let tag = unique_tag("cli-lifeline");
    let mut child = dispatcher(
        &tag,
        &[
            "run",
            "--lifeline",
            "--agent",
            "codex",
            "--",
            "SCENARIO:sleep",
        ],
    )
    .stdin(Stdio::piped())
    .spawn()
    .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    read_until(&mut out, is_first_event);
    drop(child.stdin.take()); // the caller "dies": its end of the pipe closes
    let (result, _) = finish(child, &mut out);
    assert_eq!(result["failure"]["kind"], "cancelled");
    assert_no_survivors(&tag);
}

#[test]
fn sigkill_of_the_dispatchers_parent_still_cleans_up() {
    agent_dispatch::supervise::unix::become_subreaper();
    let tag = unique_tag("cli-orphan");
    // The parent: a shell that starts the dispatcher and waits. It dies by SIGKILL, so it runs
    // no cleanup of its own; the dispatcher must notice (PR_SET_PDEATHSIG) and clean up.
    let mut parent = Command::new("sh")
        .args(["-c", "\"$0\" \"$@\" & wait"])
        .arg(env!("CARGO_BIN_EXE_agent-dispatch"))
        .args(["run", "--agent", "codex", "--", "SCENARIO:sleep"])
        .env(
            "PATH",
            format!(
                "{}:{}",
                fake_cli_dir().display(),
                std::env::var("PATH").unwrap()
            ),
        )
        .env("CODEX_HOME", codex_home())
        .env("FAKE_RUN_TAG", &tag)
        .env(SKIP.0, SKIP.1)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(parent.stdout.take().unwrap());
    read_until(&mut out, is_first_event);
    assert!(!live_tagged(&tag).is_empty(), "the dispatch is running");
    parent.kill().unwrap(); // SIGKILL
    parent.wait().unwrap();
    let rest = read_until(&mut out, |v| v["type"] == "result");
    let result = rest.last().expect("the dispatcher still writes its result");
    assert_eq!(result["failure"]["kind"], "cancelled");
    let deadline = Instant::now() + Duration::from_secs(3);
    while !live_tagged(&tag).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_no_survivors(&tag);
}

#[test]
fn agents_lists_adapters_capabilities_and_installed_versions() {
    let tag = unique_tag("cli-agents");
    let out = dispatcher(&tag, &["agents", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let codex = v
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "codex")
        .unwrap();
    assert_eq!(codex["installed"], true);
    assert_eq!(codex["version"], "codex-cli 0.171.0-fake");
    assert_eq!(codex["capabilities"]["readOnlyEnforced"], true);
    assert!(v.as_array().unwrap().iter().any(|a| a["id"] == "claude"));
}

#[test]
fn models_reads_the_catalogue_live() {
    let tag = unique_tag("cli-models");
    let out = dispatcher(&tag, &["models", "codex", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let slugs: Vec<&str> = v["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["gpt-fake-1", "gpt-fake-2"]);
}
