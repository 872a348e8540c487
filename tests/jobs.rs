//! Background jobs as a caller meets them: `run --background`, then `jobs …`, with the fake codex
//! CLI behind the real Codex adapter. Cancel and worker-death cases read /proc for survivors.

mod jobs_support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_dispatch::jobs::{JobState, Store};
use jobs_support::*;
use serde_json::Value;

#[test]
fn background_returns_at_once_and_wait_prints_what_a_blocking_run_would() {
    let w = World::new("jobs-roundtrip");
    let cwd = w.cwd();
    let t = Instant::now();
    let id = w.submit("ok");
    let returned = t.elapsed();
    assert!(returned < Duration::from_millis(500), "{returned:?}");

    let out = w.cmd(&["jobs", "wait", &id]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one result line: {stdout}");
    let waited: Value = serde_json::from_str(&stdout).unwrap();

    let blocking = w
        .cmd(&[
            "run",
            "--agent",
            "codex",
            "--cwd",
            cwd.to_str().unwrap(),
            "--",
            "SCENARIO:ok",
        ])
        .output()
        .unwrap();
    assert_eq!(blocking.status.code(), Some(0));
    let last = String::from_utf8(blocking.stdout).unwrap();
    let blocking: Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    assert_eq!(comparable(&waited), comparable(&blocking));
    assert_eq!(waited["text"], "FAKE_ANSWER: looks fine.");
    assert!(waited["usage"].is_object());

    let job = w.show(&id);
    assert_eq!(job["state"], "succeeded");
    assert_eq!(job["id"], id.as_str());
    assert_eq!(job["agent"], "codex");
    assert_eq!(job["cwd"], cwd.to_str().unwrap());
    assert!(job["createdAt"].is_u64() && job["startedAt"].is_u64() && job["finishedAt"].is_u64());
    assert_eq!(comparable(&job["result"]), comparable(&waited));

    // The log holds the whole protocol stream a blocking run prints.
    let logs = w.cmd(&["jobs", "logs", &id]).output().unwrap();
    let lines: Vec<Value> = String::from_utf8(logs.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.first().unwrap()["type"], "started");
    assert_eq!(lines.last().unwrap()["type"], "result");

    let list = w.cmd(&["jobs", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_no_survivors(&w, &id, &cwd, Duration::from_secs(1));
}

#[test]
fn bad_input_gets_a_result_line_and_starts_no_job() {
    let w = World::new("jobs-bad");
    let out = w
        .cmd(&["run", "--background", "--agent", "nope", "--", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["type"], "result");
    assert_eq!(r["failure"]["kind"], "unsupported-agent");
    let out = w
        .cmd(&[
            "run",
            "--background",
            "--agent",
            "codex",
            "--timeout",
            "soon",
            "--",
            "x",
        ])
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["failure"]["kind"], "invalid-request");
    assert!(
        Store::open(w.jobs_root()).unwrap().list().is_empty(),
        "nothing was started"
    );
    let out = w.cmd(&["jobs", "show", "../../etc"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "an id is never a path");
}

#[test]
fn cancel_mid_run_stops_the_whole_tree_and_only_that_job() {
    let w = World::new("jobs-cancel");
    let cwd = w.cwd();
    let other_cwd = w.another_cwd("other");
    let id = w.submit("sleep");
    let other = w.submit_in(&other_cwd, "sleep", &[]);
    w.until_running(&id);
    w.until_running(&other);
    assert!(live_in_dir(&cwd).len() >= 2, "the CLI and its child run");

    let t = Instant::now();
    let out = w.cmd(&["jobs", "cancel", &id, "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let job: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(job["state"], "cancelled");
    assert_eq!(job["result"]["failure"]["kind"], "cancelled");
    assert!(
        job["result"]["sessionId"].is_string(),
        "what was parsed is kept"
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_no_survivors(&w, &id, &cwd, Duration::ZERO);

    // The other job was not touched.
    assert_eq!(w.state_of(&other), "running");
    assert!(live_in_dir(&other_cwd).len() >= 2);
    let out = w.cmd(&["jobs", "wait", &id]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a cancelled job waits like a failed run"
    );
    w.cmd(&["jobs", "cancel", &other]).output().unwrap();
    assert_no_survivors(&w, &other, &other_cwd, Duration::ZERO);
}

#[test]
fn a_killed_worker_reads_lost_takes_its_tree_and_wait_returns() {
    let w = World::new("jobs-lost");
    let cwd = w.cwd();
    let id = w.submit("sleep");
    w.until_running(&id);
    let pid: i32 = std::fs::read_to_string(w.job_dir(&id).join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // A waiter blocked before the death must be released by it.
    let mut waiter = w
        .cmd(&["jobs", "wait", &id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = waiter.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "jobs wait hangs");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(1));
    assert_eq!(w.state_of(&id), "lost");
    // The tree goes with the worker within the supervisor's bounds (SIGTERM, 2 s, SIGKILL).
    assert_no_survivors(&w, &id, &cwd, Duration::from_secs(5));
    assert_eq!(w.state_of(&id), "lost", "lost stays lost");
}

#[test]
fn the_concurrency_limit_queues_in_order_and_a_queued_job_can_be_cancelled() {
    let mut w = World::new("jobs-queue");
    w.max_jobs = Some(1);
    let first = w.submit("sleep");
    let b_cwd = w.another_cwd("b");
    let second = w.submit_in(&b_cwd, "ok", &[]);
    let c_cwd = w.another_cwd("c");
    let third = w.submit_in(&c_cwd, "ok", &[]);
    w.until_running(&first);
    assert_eq!(w.state_of(&second), "queued");
    assert_eq!(w.state_of(&third), "queued");
    assert!(
        live_in_dir(&b_cwd).is_empty(),
        "a queued job starts nothing"
    );

    // Cancelling a queued job ends it without ever starting its agent.
    let out = w
        .cmd(&["jobs", "cancel", &third, "--json"])
        .output()
        .unwrap();
    let job: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(job["state"], "cancelled");
    assert!(job["startedAt"].is_null());
    assert!(job["result"]["exit"].is_null(), "nothing ran");

    let d_cwd = w.another_cwd("d");
    let fourth = w.submit_in(&d_cwd, "ok", &[]);
    assert_eq!(w.state_of(&fourth), "queued");
    w.cmd(&["jobs", "cancel", &first]).output().unwrap();
    let out = w.cmd(&["jobs", "wait", &fourth]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (b, d) = (w.show(&second), w.show(&fourth));
    assert_eq!(b["state"], "succeeded");
    // One slot, first come first served: the second job ran to its end before the fourth began.
    assert!(
        b["finishedAt"].as_u64().unwrap() <= d["startedAt"].as_u64().unwrap(),
        "{b}\n{d}"
    );
}

#[test]
fn wait_with_a_timeout_leaves_the_job_running() {
    let w = World::new("jobs-wait-timeout");
    let id = w.submit("sleep");
    let t = Instant::now();
    let out = w
        .cmd(&["jobs", "wait", &id, "--timeout", "300ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124));
    assert!(t.elapsed() < Duration::from_secs(2));
    assert!(out.stdout.is_empty());
    assert!(matches!(w.state_of(&id).as_str(), "queued" | "running"));
    w.cmd(&["jobs", "cancel", &id]).output().unwrap();
    assert_no_survivors(&w, &id, &w.cwd(), Duration::ZERO);
}

#[test]
fn prune_removes_only_finished_jobs_past_the_age() {
    let w = World::new("jobs-prune");
    let done = w.submit("ok");
    assert_eq!(
        w.cmd(&["jobs", "wait", &done])
            .output()
            .unwrap()
            .status
            .code(),
        Some(0)
    );
    let running = w.submit_in(&w.another_cwd("r"), "sleep", &[]);
    let out = w.cmd(&["jobs", "prune"]).output().unwrap();
    assert!(out.stdout.is_empty(), "nothing is a week old");
    std::thread::sleep(Duration::from_millis(20));
    let out = w
        .cmd(&["jobs", "prune", "--older-than", "10ms"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), done);
    assert!(!w.job_dir(&done).exists());
    assert!(w.job_dir(&running).exists(), "a live job is never pruned");
    w.cmd(&["jobs", "cancel", &running]).output().unwrap();
}

/// Two workers write while readers list and show in a loop: every read is a whole, parseable
/// job, no job ever vanishes or reads `lost`, and both end `succeeded`.
#[test]
fn two_workers_and_many_readers_never_see_a_torn_or_lost_job() {
    let w = World::new("jobs-stress");
    let a = w.submit("stderr-flood");
    let b = w.submit_in(&w.another_cwd("b"), "stderr-flood", &[]);
    let root = w.jobs_root();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..6)
        .map(|_| {
            let root = root.clone();
            let stop = stop.clone();
            let ids = [a.clone(), b.clone()];
            std::thread::spawn(move || {
                let store = Store::open(root).unwrap();
                let mut reads = 0usize;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let all = store.list();
                    assert_eq!(all.len(), 2, "a job vanished from the list");
                    for id in &ids {
                        let v = store
                            .find(&agent_dispatch::jobs::JobId::parse(id).unwrap())
                            .expect("a job vanished");
                        assert_ne!(v.state, JobState::Lost, "a live job read lost");
                        if v.state.is_finished() {
                            assert!(v.result.is_some());
                        }
                        reads += 1;
                    }
                }
                reads
            })
        })
        .collect();
    let mut cli_reads = 0;
    for id in [&a, &b] {
        loop {
            let out = w.cmd(&["jobs", "--json"]).output().unwrap();
            let list: Value = serde_json::from_slice(&out.stdout).expect("whole JSON");
            cli_reads += 1;
            let job = list
                .as_array()
                .unwrap()
                .iter()
                .find(|j| j["id"] == id.as_str())
                .unwrap()
                .clone();
            if job["state"] == "succeeded" {
                break;
            }
            assert!(
                matches!(job["state"].as_str(), Some("queued" | "running")),
                "{job}"
            );
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads: usize = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(reads > 100 && cli_reads > 2, "{reads} {cli_reads}");
}

fn schema(root: Option<&str>) -> jsonschema::Validator {
    let mut schema: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/docs/protocol.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    if let Some(def) = root {
        schema["oneOf"] = serde_json::json!([{ "$ref": format!("#/$defs/{def}") }]);
    }
    jsonschema::validator_for(&schema).expect("the schema itself is valid")
}

fn assert_valid(v: &jsonschema::Validator, json: &Value) {
    let errors: Vec<String> = v.iter_errors(json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{json}\n{errors:#?}");
}

/// The job line, every job view (`jobs --json`, `show`, `cancel --json`) and every line a job
/// logged (usage events and the new failure kinds included) match docs/protocol.schema.json.
#[test]
fn every_jobs_output_matches_the_schema() {
    let w = World::new("jobs-schema");
    let lines = schema(None);
    let views = schema(Some("jobView"));
    let cwd = w.cwd();
    let out = w
        .cmd(&[
            "run",
            "--background",
            "--agent",
            "codex",
            "--cwd",
            cwd.to_str().unwrap(),
            "--",
            "SCENARIO:ok",
        ])
        .output()
        .unwrap();
    let job: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&lines, &job);
    let ok = job["id"].as_str().unwrap().to_owned();
    let over = w.submit_in(
        &w.another_cwd("b"),
        "growing-usage",
        &["--max-tokens", "200"],
    );
    let slow = w.submit_in(&w.another_cwd("c"), "sleep", &["--timeout", "1s"]);
    let lost = w.submit_in(&w.another_cwd("d"), "sleep", &[]);
    for id in [&ok, &over, &slow] {
        w.cmd(&["jobs", "wait", id]).output().unwrap();
    }
    w.until_running(&lost);
    let pid: i32 = std::fs::read_to_string(w.job_dir(&lost).join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    w.cmd(&["jobs", "wait", &lost]).output().unwrap();

    let kinds: Vec<Value> = [&over, &slow]
        .iter()
        .map(|id| w.show(id)["result"]["failure"]["kind"].clone())
        .collect();
    assert_eq!(kinds, ["budget-exceeded", "timeout"]);
    let list = w.cmd(&["jobs", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let states: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["state"].as_str().unwrap())
        .collect();
    assert_eq!(states.len(), 4);
    assert!(states.contains(&"lost") && states.contains(&"succeeded"));
    for j in list.as_array().unwrap() {
        assert_valid(&views, j);
        let id = j["id"].as_str().unwrap();
        assert_valid(&views, &w.show(id));
        let logs = w.cmd(&["jobs", "logs", id]).output().unwrap();
        for line in String::from_utf8(logs.stdout).unwrap().lines() {
            assert_valid(&lines, &serde_json::from_str(line).unwrap());
        }
    }
    let logs = w.cmd(&["jobs", "logs", &over]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&logs.stdout).contains(r#""type":"usage""#),
        "usage events are logged"
    );
    assert_no_survivors(&w, &lost, &w.another_cwd("d"), Duration::from_secs(5));
}
