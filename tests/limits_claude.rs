//! Limits on a real, pinned `claude` run (its fake Messages endpoint on 127.0.0.1 reports usage
//! on every model message, so the running total grows as the agent works): the token budget
//! stops the run at the first report over it, the time limit stops a run mid-command, both keep
//! the usage reported so far, and the tree is byte-identical afterwards with no process group
//! left (the harness asserts both).

mod claude_common;

use std::time::Duration;

use agent_dispatch::adapters::claude::fake_api::Script;
use agent_dispatch::contract::{FailureKind, StreamEvent};
use agent_dispatch::limits::Limits;
use agent_dispatch::readonly::scratch::ScratchRepo;

use claude_common::*;

fn usage_totals(events: &[StreamEvent]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Usage { usage } => Some(usage.total_tokens()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn limits_stop_a_real_claude_run() {
    let (budget, timeout) = tokio::join!(over_budget(), past_the_time_limit());
    let _ = (budget, timeout);
}

/// Eight scripted commands, each one more model message (120 tokens a message): a budget of
/// 300 trips at the third message, long before the script ends.
async fn over_budget() {
    let repo = ScratchRepo::create(None).unwrap();
    let mut script = Script::new();
    for i in 0..8 {
        script = script.bash(format!("echo step-{i}"));
    }
    let mut d = Dispatch::new(repo.path(), script.text("FAKE_DONE"));
    d.limits = Limits {
        timeout: None,
        max_tokens: Some(300),
    };
    let run = d.run().await;
    let failure = run.failure.clone().expect("a failure");
    assert_eq!(failure.kind, FailureKind::BudgetExceeded, "{failure:?}");
    let totals = usage_totals(&run.events);
    let over: Vec<_> = totals.iter().filter(|t| **t > 300).collect();
    assert!(!over.is_empty(), "{totals:?}");
    let used = run.usage.expect("usage kept").total_tokens();
    assert!(used > 300, "{used}");
    assert!(
        failure.message.contains(&over[0].to_string()),
        "stopped at the first report over the budget: {failure:?} {totals:?}"
    );
    let requests = run.fake.message_requests().len();
    assert!(
        requests < 9,
        "the script never ran to its end: {requests} requests"
    );
    run.assert_tree_identical();
}

/// A command that would take a minute; the limit is a few seconds.
async fn past_the_time_limit() {
    let repo = ScratchRepo::create(None).unwrap();
    let script = Script::new()
        .bash("python3 -c \"import time; time.sleep(60)\"")
        .text("FAKE_DONE");
    let mut d = Dispatch::new(repo.path(), script);
    d.limits = Limits {
        timeout: Some(Duration::from_secs(6)),
        max_tokens: None,
    };
    let run = d.run().await;
    let failure = run
        .failure
        .clone()
        .unwrap_or_else(|| panic!("{:?}", run.tool_results()));
    assert_eq!(failure.kind, FailureKind::Timeout, "{failure:?}");
    assert!(
        run.usage.is_some(),
        "the usage reported before the limit is kept"
    );
    assert!(!usage_totals(&run.events).is_empty());
    assert!(
        run.duration < Duration::from_secs(6 + 5),
        "stopped within the supervisor's bounds: {:?}",
        run.duration
    );
    run.assert_tree_identical();
}
