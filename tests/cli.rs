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
    // Outside the temp dir (Codex's sandbox breaks there) and the clone, empty: no user config.
    homes::shared_home("cli-test-codex-home")
}

/// The dispatcher with the fake CLI first on PATH; `run` gets `--cwd <dir>`, so every process
/// of the dispatch can be found by its working directory.
fn dispatcher(dir: &std::path::Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agent-dispatch"));
    let mut args: Vec<&str> = args.to_vec();
    let dir_s = dir.to_str().unwrap().to_owned();
    if args.first() == Some(&"run") {
        args.splice(1..1, ["--cwd", dir_s.as_str()]);
    }
    c.args(&args);
    with_fake_env(&mut c);
    c
}

/// The fake CLI first on PATH, an empty CODEX_HOME outside the temp dir, the check bypassed.
fn with_fake_env(c: &mut Command) -> &mut Command {
    let path = format!(
        "{}:{}",
        fake_cli_dir().display(),
        std::env::var("PATH").unwrap()
    );
    c.env("PATH", path)
        .env("CODEX_HOME", codex_home())
        .env(SKIP.0, SKIP.1)
        .stdout(Stdio::piped())
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

/// The `sleep` scenario's first command event: by then its grandchild is running too.
fn is_first_event(v: &Value) -> bool {
    v["type"] == "event" && v["event"]["type"] == "command"
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

fn assert_no_survivors(dir: &std::path::Path) {
    let live = live_in_dir(dir);
    assert!(
        live.is_empty(),
        "processes of the dispatch survive: {live:?}"
    );
}

/// The fake CLI and its grandchild are both running in `dir`.
fn assert_running(dir: &std::path::Path) {
    let live = live_in_dir(dir);
    assert!(
        live.len() >= 2,
        "expected the CLI and its child in {}: {live:?}",
        dir.display()
    );
}

#[test]
fn a_successful_run_streams_started_events_and_one_result() {
    let dir = run_dir("cli-ok");
    let out = dispatcher(
        dir.path(),
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
    assert_no_survivors(dir.path());
}

#[test]
fn a_mistyped_bypass_is_an_error_not_a_bypass() {
    let dir = run_dir("cli-bypass");
    let out = dispatcher(
        dir.path(),
        &["run", "--agent", "codex", "--", "SCENARIO:ok"],
    )
    .env(SKIP.0, "1")
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r: Value = serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
    assert_eq!(r["failure"]["kind"], "invalid-request");
    assert!(live_in_dir(dir.path()).is_empty());
}

#[test]
fn sigterm_to_the_dispatcher_cancels_and_still_writes_the_result() {
    let dir = run_dir("cli-term");
    let mut child = dispatcher(
        dir.path(),
        &["run", "--agent", "codex", "--", "SCENARIO:sleep"],
    )
    .stdin(Stdio::null())
    .spawn()
    .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    read_until(&mut out, is_first_event);
    assert_running(dir.path());
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
    assert_no_survivors(dir.path());
}

#[test]
fn lifeline_eof_cancels_the_dispatch() {
    let dir = run_dir("cli-lifeline");
    let mut child = dispatcher(
        dir.path(),
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
    assert_running(dir.path());
    drop(child.stdin.take()); // the caller "dies": its end of the pipe closes
    let (result, _) = finish(child, &mut out);
    assert_eq!(result["failure"]["kind"], "cancelled");
    assert_no_survivors(dir.path());
}

#[test]
fn with_the_lifeline_held_open_the_dispatcher_still_exits_after_its_result() {
    let dir = run_dir("cli-lifeline-open");
    let t = Instant::now();
    let mut child = dispatcher(
        dir.path(),
        &["run", "--lifeline", "--agent", "codex", "--", "SCENARIO:ok"],
    )
    .stdin(Stdio::piped())
    .spawn()
    .unwrap();
    let _held = child.stdin.take(); // the caller keeps its end open, as the extension does
    // A watchdog turns a hang (the bug this guards against) into a failure instead.
    let pid = Pid::from_raw(child.id() as i32);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(10));
        let _ = kill(pid, Signal::SIGKILL);
    });
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let (result, code) = finish(child, &mut out);
    assert_eq!(result["ok"], true);
    assert_eq!(code, 0);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[test]
fn sigkill_of_the_dispatchers_parent_still_cleans_up() {
    agent_dispatch::supervise::unix::become_subreaper();
    let dir = run_dir("cli-orphan");
    // The parent: a shell that starts the dispatcher and waits. It dies by SIGKILL, so it runs
    // no cleanup of its own; the dispatcher must notice (PR_SET_PDEATHSIG) and clean up.
    let mut parent = Command::new("sh");
    parent
        .args(["-c", "\"$0\" \"$@\" & wait"])
        .arg(env!("CARGO_BIN_EXE_agent-dispatch"))
        .args(["run", "--agent", "codex", "--cwd"])
        .arg(dir.path())
        .args(["--", "SCENARIO:sleep"])
        .stdin(Stdio::null());
    let mut parent = with_fake_env(&mut parent).spawn().unwrap();
    let mut out = BufReader::new(parent.stdout.take().unwrap());
    read_until(&mut out, is_first_event);
    assert_running(dir.path());
    parent.kill().unwrap(); // SIGKILL
    parent.wait().unwrap();
    let rest = read_until(&mut out, |v| v["type"] == "result");
    let result = rest.last().expect("the dispatcher still writes its result");
    assert_eq!(result["failure"]["kind"], "cancelled");
    let deadline = Instant::now() + Duration::from_secs(3);
    while !live_in_dir(dir.path()).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_no_survivors(dir.path());
}

#[test]
fn agents_lists_adapters_capabilities_and_installed_versions() {
    let dir = run_dir("cli-agents");
    let out = dispatcher(dir.path(), &["agents", "--json"])
        .output()
        .unwrap();
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
    let dir = run_dir("cli-models");
    let out = dispatcher(dir.path(), &["models", "codex", "--json"])
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
