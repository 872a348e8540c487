//! Hard limits on a dispatch, through the binary with the fake codex CLI behind the real Codex
//! adapter: a wall-clock limit and a token budget end the run with their own failure kind, keep
//! the usage reported so far, and leave no process of the run behind (/proc).

mod jobs_support;

use std::time::{Duration, Instant};

use jobs_support::*;
use serde_json::Value;

fn result_of(out: &std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().expect("a result line")).unwrap()
}

#[test]
fn a_run_past_its_time_limit_fails_as_timeout_and_leaves_no_survivor() {
    let w = World::new("limits-timeout");
    let cwd = w.cwd();
    let t = Instant::now();
    let out = w
        .cmd(&[
            "run",
            "--agent",
            "codex",
            "--cwd",
            cwd.to_str().unwrap(),
            "--timeout",
            "2s",
            "--",
            "SCENARIO:sleep",
        ])
        .output()
        .unwrap();
    let took = t.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let r = result_of(&out);
    assert_eq!(r["failure"]["kind"], "timeout", "{r}");
    assert!(r["failure"]["message"].as_str().unwrap().contains("2s"));
    assert!(r["sessionId"].is_string(), "what was parsed is kept");
    // The limit, then the cooperative CLI's SIGTERM exit: well inside the grace period.
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(4),
        "{took:?}"
    );
    assert!(live_in_dir(&cwd).is_empty(), "{:?}", live_in_dir(&cwd));
}

#[test]
fn a_time_limit_after_the_final_answer_does_not_fail_the_run() {
    // The fake answers at once (its first turn.completed) and then keeps running: the exit
    // grace after the answer stops it, and a time limit inside that grace changes nothing.
    let w = World::new("limits-late");
    let cwd = w.cwd();
    let out = w
        .cmd(&[
            "run",
            "--agent",
            "codex",
            "--cwd",
            cwd.to_str().unwrap(),
            "--timeout",
            "1s",
            "--",
            "SCENARIO:growing-usage",
        ])
        .output()
        .unwrap();
    let r = result_of(&out);
    assert_eq!(r["ok"], true, "{r}");
    assert!(live_in_dir(&cwd).is_empty(), "{:?}", live_in_dir(&cwd));
}

#[test]
fn the_time_limit_comes_from_the_environment_unless_the_call_says_otherwise() {
    let w = World::new("limits-env");
    let cwd = w.cwd();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--agent", "codex", "--cwd", cwd.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend(["--", "SCENARIO:sleep"]);
        let out = w
            .cmd(&args)
            .env("AGENT_DISPATCH_TIMEOUT", "1s")
            .output()
            .unwrap();
        result_of(&out)
    };
    let r = run(&[]);
    assert_eq!(r["failure"]["kind"], "timeout");
    assert!(r["failure"]["message"].as_str().unwrap().contains("1s"));
    let out = w
        .cmd(&["run", "--agent", "codex", "--", "SCENARIO:ok"])
        .env("AGENT_DISPATCH_TIMEOUT", "whenever")
        .output()
        .unwrap();
    assert_eq!(result_of(&out)["failure"]["kind"], "invalid-request");
    assert!(live_in_dir(&cwd).is_empty());
}

#[test]
fn a_run_over_its_token_budget_fails_as_budget_exceeded_at_the_first_report_over_it() {
    let w = World::new("limits-budget");
    let cwd = w.cwd();
    // The fake reports 160 tokens a turn, a turn every 100 ms: the third report is over 400.
    let t = Instant::now();
    let out = w
        .cmd(&[
            "run",
            "--agent",
            "codex",
            "--cwd",
            cwd.to_str().unwrap(),
            "--max-tokens",
            "400",
            "--",
            "SCENARIO:growing-usage",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let r = result_of(&out);
    assert_eq!(r["failure"]["kind"], "budget-exceeded", "{r}");
    let u = &r["usage"];
    let total: u64 = ["input", "cacheRead", "cacheWrite", "output"]
        .iter()
        .map(|k| u[k].as_u64().unwrap())
        .sum();
    assert_eq!(
        total,
        3 * 160,
        "stopped at the first report over the budget: {u}"
    );
    assert!(r["failure"]["message"].as_str().unwrap().contains("480"));
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(live_in_dir(&cwd).is_empty(), "{:?}", live_in_dir(&cwd));

    // The usage events the budget is enforced on are in the stream, as running totals.
    let usages: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["event"]["type"] == "usage")
        .map(|v| v["event"]["usage"]["output"].as_u64().unwrap())
        .collect();
    assert_eq!(usages, [40, 80, 120]);
}

#[test]
fn limits_apply_to_background_jobs_too() {
    let w = World::new("limits-job");
    let cwd = w.cwd();
    let id = w.submit_in(
        &cwd,
        "sleep",
        &["--timeout", "1s", "--max-tokens", "100000"],
    );
    let out = w.cmd(&["jobs", "wait", &id]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["failure"]["kind"], "timeout");
    let job = w.show(&id);
    assert_eq!(job["state"], "failed");
    assert_eq!(job["limits"]["timeoutMs"], 1000);
    assert_eq!(job["limits"]["maxTokens"], 100000);
    assert_no_survivors(&w, &id, &cwd, Duration::ZERO);
}

#[test]
fn agents_says_how_often_each_cli_reports_usage() {
    let w = World::new("limits-agents");
    let out = w.cmd(&["agents", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for a in v.as_array().unwrap() {
        let r = a["capabilities"]["usageReports"]
            .as_str()
            .unwrap_or_default();
        assert!(matches!(r, "per-message" | "per-turn"), "{a}");
    }
}
