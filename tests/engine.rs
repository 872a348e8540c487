//! Engine tests: the runner and supervisor against the fake CLI, through a test adapter. Every
//! case of the seed's fixture suite and its review rounds; cancellation cases read /proc to
//! prove that no process of the run survives.

mod support;
#[path = "support/test_adapter.rs"]
mod test_adapter;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_dispatch::contract::{DispatchResult, FailureKind, Reported, StreamEvent, Usage};
use agent_dispatch::dispatch::{DispatchOptions, dispatch_valid};
use agent_dispatch::request::ValidRequest;
use agent_dispatch::runner::EXIT_GRACE_AFTER_ANSWER;
use agent_dispatch::supervise::{Supervisor, Termination, unix};
use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use support::*;
use test_adapter::TEST_ADAPTER;

const FAKE_USAGE: Usage = Usage {
    input: 100,
    cache_read: 20,
    cache_write: 5,
    output: 40,
    reasoning: 8,
    cost_usd: None,
};

fn request(task: &str) -> ValidRequest {
    ValidRequest {
        adapter: &TEST_ADAPTER,
        task: task.to_owned(),
        scope: None,
        model: None,
        effort: None,
        cwd: std::env::temp_dir(),
    }
}

struct Run {
    result: DispatchResult,
    events: Vec<StreamEvent>,
    tag: String,
}

async fn run_with(task: &str, supervisor: &Supervisor, cancel: CancellationToken) -> Run {
    run_hooked(task, supervisor, cancel, |_| {}).await
}

/// Like [`run_with`], calling `hook` on every event as it arrives (to act on a real event
/// rather than after a sleep).
async fn run_hooked(
    task: &str,
    supervisor: &Supervisor,
    cancel: CancellationToken,
    mut hook: impl FnMut(&StreamEvent) + Send,
) -> Run {
    unix::become_subreaper();
    let tag = unique_tag("engine");
    let opts = DispatchOptions {
        parent_env: env_with_fake_path(&tag),
        endpoint: None,
        gate: agent_dispatch::readonly::gate::GatePolicy::Bypass,
        limits: Default::default(),
    };
    let mut events = Vec::new();
    let result = {
        let mut sink = |e: StreamEvent| {
            hook(&e);
            events.push(e)
        };
        dispatch_valid(&request(task), &opts, supervisor, cancel, &mut sink).await
    };
    Run {
        result,
        events,
        tag,
    }
}

async fn run(scenario: &str) -> Run {
    run_with(
        &format!("SCENARIO:{scenario}"),
        &Supervisor::new(),
        CancellationToken::new(),
    )
    .await
}

fn kind(r: &DispatchResult) -> Option<FailureKind> {
    r.failure.as_ref().map(|f| f.kind)
}

/// After an unwinding path the tree was SIGKILLed synchronously; the kernel takes a moment to
/// finish the kill, and there is no event to wait on for processes that are not our children.
async fn assert_gone_soon(tag: &str) {
    let deadline = Instant::now() + Duration::from_secs(1);
    while !live_tagged(tag).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_no_survivors(tag);
}

fn assert_no_survivors(tag: &str) {
    let live = live_tagged(tag);
    assert!(live.is_empty(), "processes of the run survive: {live:?}");
}

#[tokio::test]
async fn success_carries_text_usage_session_and_unreported_identity() {
    let r = run("ok").await;
    assert!(r.result.ok, "{:?}", r.result.failure);
    assert_eq!(r.result.text, "FAKE_ANSWER: looks fine.");
    assert_eq!(r.result.usage, Some(FAKE_USAGE));
    assert!(
        r.result
            .session_id
            .as_deref()
            .unwrap()
            .starts_with("fake-thread-")
    );
    assert_eq!(r.result.identity.confirmed.model, Reported::NotReported);
    assert_eq!(r.result.exit.as_ref().unwrap().code, Some(0));
    assert!(matches!(
        r.events.last(),
        Some(StreamEvent::Done { success: true })
    ));
    assert_no_survivors(&r.tag);
}

#[tokio::test]
async fn byte_by_byte_utf8_is_decoded_whole_on_stdout_and_stderr() {
    let r = run("byte-split").await;
    assert!(r.result.ok, "{:?}", r.result.failure);
    assert_eq!(r.result.text, "héllo ✓ 日本語 🎉");
    assert!(
        r.result.stderr_tail.contains("stderr ✓ 🎉"),
        "{}",
        r.result.stderr_tail
    );
    assert!(!r.result.stderr_tail.contains('\u{FFFD}'));
}

#[tokio::test]
async fn final_line_without_newline_is_parsed() {
    let r = run("no-newline").await;
    assert!(r.result.ok, "{:?}", r.result.failure);
    assert_eq!(r.result.text, "tail");
    assert_eq!(r.result.usage, Some(FAKE_USAGE));
}

#[tokio::test]
async fn malformed_line_then_stall_ends_promptly_as_malformed_stream() {
    let t = Instant::now();
    let r = run("malformed-then-stall").await;
    assert_eq!(kind(&r.result), Some(FailureKind::MalformedStream));
    // The stalled CLI was stopped by us (SIGTERM), yet the parse failure is what is reported.
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_no_survivors(&r.tag);
}

#[tokio::test]
async fn exit_zero_without_terminal_event_is_incomplete() {
    let r = run("no-terminal").await;
    assert_eq!(kind(&r.result), Some(FailureKind::IncompleteStream));
    assert_eq!(r.result.text, "partial");
}

#[tokio::test]
async fn error_envelope_fails_with_its_message_whatever_the_exit_code() {
    for scenario in ["error-envelope", "error-envelope-exit0"] {
        let r = run(scenario).await;
        assert_eq!(
            kind(&r.result),
            Some(FailureKind::ErrorEnvelope),
            "{scenario}"
        );
        assert!(r.result.failure.unwrap().message.contains("FAKE_FAILURE"));
    }
}

#[tokio::test]
async fn nonzero_exit_fails_keeping_usage_and_stderr() {
    let r = run("nonzero-exit").await;
    assert_eq!(kind(&r.result), Some(FailureKind::NonzeroExit));
    let f = r.result.failure.unwrap();
    assert!(
        f.message.contains("code 3") && f.message.contains("fatal: boom"),
        "{f:?}"
    );
    assert_eq!(r.result.usage, Some(FAKE_USAGE), "usage survives, once");
    assert!(r.result.stderr_tail.contains("fatal: boom"));
}

#[tokio::test]
async fn death_by_signal_is_typed() {
    let r = run("signal").await;
    assert_eq!(kind(&r.result), Some(FailureKind::Signal));
    assert_eq!(r.result.exit.unwrap().signal, Some(9));
}

#[tokio::test]
async fn unknown_wellformed_events_are_ignored_and_never_complete() {
    let r = run("unknown-events").await;
    assert!(r.result.ok, "{:?}", r.result.failure);
    assert_eq!(r.result.text, "fine");
    let r = run("only-unknown").await;
    assert_eq!(kind(&r.result), Some(FailureKind::IncompleteStream));
}

#[tokio::test]
async fn over_long_line_is_a_malformed_stream() {
    let t = Instant::now();
    let r = run("long-line").await;
    assert_eq!(kind(&r.result), Some(FailureKind::MalformedStream));
    assert!(r.result.failure.unwrap().message.contains(&format!(
        "{} bytes",
        agent_dispatch::runner::framing::MAX_LINE_BYTES
    )));
    assert!(t.elapsed() < Duration::from_secs(4));
    assert_no_survivors(&r.tag);
}

#[tokio::test]
async fn stderr_flood_is_kept_as_a_bounded_marked_tail() {
    let r = run("stderr-flood").await;
    assert!(r.result.ok, "{:?}", r.result.failure);
    assert!(r.result.stderr_tail.starts_with("[stderr truncated: "));
    assert!(r.result.stderr_tail.len() <= 256 * 1024 + 100);
}

#[tokio::test]
async fn a_descendant_holding_stdout_does_not_hang_the_run_and_is_cleaned_up() {
    let t = Instant::now();
    let r = run("descendant-holds-stdout").await;
    assert!(r.result.ok, "{:?}", r.result.failure);
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    assert_no_survivors(&r.tag);
}

#[tokio::test]
async fn a_cli_lingering_after_its_final_answer_is_stopped_and_the_answer_stands() {
    let t = Instant::now();
    let r = run("linger-after-answer").await;
    assert!(r.result.ok, "{:?}", r.result.failure);
    let bound = EXIT_GRACE_AFTER_ANSWER + Duration::from_secs(3);
    assert!(t.elapsed() < bound, "{:?} (bound {bound:?})", t.elapsed());
    let dones = r
        .events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Done { .. }));
    assert_eq!(dones.count(), 1, "{:?}", r.events);
    assert!(
        !r.events
            .iter()
            .any(|e| format!("{e:?}").contains("SECOND_TURN"))
    );
    assert!(r.result.usage.is_some());
    assert!(r.events.iter().any(|e| matches!(e,
        StreamEvent::Notice { message, .. } if message.contains("after its final answer"))));
    assert_no_survivors(&r.tag);
}

#[tokio::test]
async fn cancel_stops_the_whole_group_and_keeps_usage_so_far() {
    let cancel = CancellationToken::new();
    let sup = Supervisor::new();
    let trigger = cancel.clone();
    let mut cancelled_at = None;
    // Cancel once the CLI is demonstrably running: its first event is on the wire.
    let r = run_hooked("SCENARIO:sleep", &sup, cancel, |e| {
        if matches!(e, StreamEvent::Metadata { .. }) && cancelled_at.is_none() {
            cancelled_at = Some(Instant::now());
            trigger.cancel();
        }
    })
    .await;
    let took = cancelled_at.unwrap().elapsed();
    assert_eq!(kind(&r.result), Some(FailureKind::Cancelled));
    assert!(took < Duration::from_millis(500), "cancel took {took:?}");
    assert!(
        r.result.session_id.is_some(),
        "what was parsed before cancel is kept"
    );
    assert_no_survivors(&r.tag);
    assert_eq!(sup.active(), 0);
}

#[tokio::test]
async fn a_sigterm_ignoring_tree_is_killed_after_the_grace_period() {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let t = Instant::now();
    let r = run_hooked("SCENARIO:ignore-term", &Supervisor::new(), cancel, |e| {
        if matches!(e, StreamEvent::Metadata { .. }) {
            trigger.cancel()
        }
    })
    .await;
    assert_eq!(kind(&r.result), Some(FailureKind::Cancelled));
    assert!(
        t.elapsed() >= Duration::from_secs(2),
        "SIGKILL only after the grace period"
    );
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    assert_no_survivors(&r.tag);
}

#[tokio::test]
async fn cancel_before_start_spawns_nothing() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    let sup = Supervisor::new();
    let r = run_with("SCENARIO:ok", &sup, cancel).await;
    assert_eq!(kind(&r.result), Some(FailureKind::Cancelled));
    assert!(r.result.exit.is_none(), "nothing ran");
    assert_eq!(sup.active(), 0);
}

#[tokio::test]
async fn cancel_during_startup_before_any_output() {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let sup = Supervisor::new();
    let (r, _) = tokio::join!(run_with("SCENARIO:slow-start", &sup, cancel), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    assert_eq!(kind(&r.result), Some(FailureKind::Cancelled));
    assert_no_survivors(&r.tag);
}

#[tokio::test]
async fn shutdown_during_a_run_cancels_it_and_refuses_new_spawns() {
    let sup = Supervisor::new();
    let s2 = sup.clone();
    let (running_tx, running_rx) = tokio::sync::oneshot::channel::<()>();
    let mut running_tx = Some(running_tx);
    let (r, _) = tokio::join!(
        run_hooked("SCENARIO:sleep", &sup, CancellationToken::new(), |e| {
            if matches!(e, StreamEvent::Metadata { .. })
                && let Some(tx) = running_tx.take()
            {
                let _ = tx.send(());
            }
        }),
        async move {
            running_rx.await.unwrap();
            // Concurrent and repeated shutdowns all wait for the same cleanup.
            tokio::join!(s2.shutdown(), s2.shutdown(), s2.shutdown());
            assert_eq!(s2.active(), 0);
        }
    );
    // The run was stopped from outside: its CLI died by our SIGTERM.
    assert_eq!(kind(&r.result), Some(FailureKind::Signal));
    assert_no_survivors(&r.tag);
    let late = run_with("SCENARIO:ok", &sup, CancellationToken::new()).await;
    assert_eq!(kind(&late.result), Some(FailureKind::Cancelled));
    assert!(
        late.result.exit.is_none(),
        "nothing was spawned during shutdown"
    );
}

#[tokio::test]
async fn overlapping_terminate_calls_share_one_cleanup_and_spare_bystanders() {
    unix::become_subreaper();
    let tag = unique_tag("overlap");
    // A bystander in its own group must survive everything below.
    let mut bystander = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let sup = Supervisor::new();
    let env = env_with_fake_path(&tag);
    let launch = agent_dispatch::launch::Launch {
        program: fake_cli_dir().join("codex"),
        args: vec!["exec".into(), "--".into(), "SCENARIO:ignore-term".into()],
        cwd: std::env::temp_dir(),
        env: env.into_iter().collect(),
        stdin: agent_dispatch::launch::StdinPlan::Null,
        wall: None,
    };
    let child = sup.spawn(&launch).unwrap();
    // Wait for the fake's first line so its SIGTERM handler is installed.
    let mut stdout = child.stdout.unwrap();
    let mut b = [0u8; 1];
    tokio::io::AsyncReadExt::read(&mut stdout, &mut b)
        .await
        .unwrap();
    let g = child.group.clone();
    let t = Instant::now();
    let (a, b, ()) = tokio::join!(g.terminate(), g.terminate(), sup.shutdown());
    let took = t.elapsed();
    assert_eq!(a, Termination::Killed);
    assert_eq!(b, Termination::Killed);
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(4),
        "{took:?}"
    );
    assert_eq!(
        g.terminate().await,
        Termination::Killed,
        "repeat returns the same outcome"
    );
    assert_no_survivors(&tag);
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "bystander was signalled"
    );
    bystander.kill().unwrap();
    let _ = bystander.wait();
}

#[tokio::test]
async fn a_failed_spawn_has_no_pid_and_signals_nothing() {
    let sup = Supervisor::new();
    let launch = agent_dispatch::launch::Launch {
        program: "/nonexistent/agent".into(),
        args: vec![],
        cwd: std::env::temp_dir(),
        env: vec![],
        stdin: agent_dispatch::launch::StdinPlan::Null,
        wall: None,
    };
    let err = sup.spawn(&launch).err().unwrap();
    assert_eq!(err.kind, FailureKind::NotInstalled);
    assert_eq!(sup.active(), 0);
}

#[tokio::test]
async fn two_concurrent_runs_keep_identity_usage_and_cleanup_separate() {
    let sup = Supervisor::new();
    let cancel_b = CancellationToken::new();
    let trigger = cancel_b.clone();
    let (a_done_tx, a_done_rx) = tokio::sync::oneshot::channel::<()>();
    let (a, b, _) = tokio::join!(
        async {
            let a = run_with("SCENARIO:ok", &sup, CancellationToken::new()).await;
            let _ = a_done_tx.send(());
            a
        },
        run_with("SCENARIO:sleep", &sup, cancel_b),
        async {
            // B is cancelled only after A has finished, so both really overlapped.
            a_done_rx.await.unwrap();
            trigger.cancel();
        }
    );
    assert!(a.result.ok);
    assert_eq!(a.result.usage, Some(FAKE_USAGE));
    assert_eq!(kind(&b.result), Some(FailureKind::Cancelled));
    assert_eq!(b.result.usage, None, "the sleeping run reported none");
    assert_ne!(a.result.session_id, b.result.session_id);
    assert_no_survivors(&a.tag);
    assert_no_survivors(&b.tag);
}

#[tokio::test]
async fn a_panicking_parser_still_ends_in_cleanup() {
    let sup = Supervisor::new();
    let tag_holder = Arc::new(Mutex::new(String::new()));
    let th = tag_holder.clone();
    let sup3 = sup.clone();
    let res = std::panic::AssertUnwindSafe(async move {
        unix::become_subreaper();
        let tag = unique_tag("panic");
        *th.lock().unwrap() = tag.clone();
        let opts = DispatchOptions {
            parent_env: env_with_fake_path(&tag),
            endpoint: None,
            gate: agent_dispatch::readonly::gate::GatePolicy::Bypass,
            limits: Default::default(),
        };
        let mut sink = |_e| {};
        dispatch_valid(
            &request("SCENARIO:echo-prompt PANIC_PARSER"),
            &opts,
            &sup3,
            CancellationToken::new(),
            &mut sink,
        )
        .await
    })
    .catch_unwind()
    .await;
    assert!(res.is_err(), "the parser panic propagates");
    let tag = tag_holder.lock().unwrap().clone();
    assert_gone_soon(&tag).await;
}

#[tokio::test]
async fn a_panicking_event_callback_still_ends_in_cleanup() {
    let sup = Supervisor::new();
    unix::become_subreaper();
    let tag = unique_tag("cbpanic");
    let opts = DispatchOptions {
        parent_env: env_with_fake_path(&tag),
        endpoint: None,
        gate: agent_dispatch::readonly::gate::GatePolicy::Bypass,
        limits: Default::default(),
    };
    let res = std::panic::AssertUnwindSafe(async {
        let mut sink = |e: StreamEvent| {
            if matches!(e, StreamEvent::Metadata { .. }) {
                panic!("callback panic");
            }
        };
        dispatch_valid(
            &request("SCENARIO:sleep"),
            &opts,
            &sup,
            CancellationToken::new(),
            &mut sink,
        )
        .await
    })
    .catch_unwind()
    .await;
    assert!(res.is_err());
    assert_gone_soon(&tag).await;
}

#[tokio::test]
async fn a_task_of_several_megabytes_reaches_the_cli_intact() {
    // Past Linux's 128 KiB per-argv-string cap: it must go through stdin, written then closed.
    let big: String = (0..3 * 1024 * 1024)
        .map(|i| ['a', 'é', '✓', '\n', '"'][i % 5])
        .collect();
    let task = format!("SCENARIO:prompt-digest\n{big}");
    let r = run_with(&task, &Supervisor::new(), CancellationToken::new()).await;
    assert!(r.result.ok, "{:?}", r.result.failure);
    let prompt = agent_dispatch::prompt::assemble(&task, None);
    let want = format!(
        "sha256={:x} bytes={} via=stdin",
        <sha2::Sha256 as sha2::Digest>::digest(prompt.as_bytes()),
        prompt.len()
    );
    assert_eq!(r.result.text, want);
}

#[tokio::test]
async fn a_captured_command_dropped_by_a_callers_timeout_leaves_nothing_behind() {
    unix::become_subreaper();
    let tag = unique_tag("capture-drop");
    let sup = Supervisor::new();
    let launch = agent_dispatch::launch::Launch {
        program: fake_cli_dir().join("codex"),
        args: vec!["exec".into(), "--".into(), "SCENARIO:sleep".into()],
        cwd: std::env::temp_dir(),
        env: env_with_fake_path(&tag).into_iter().collect(),
        stdin: agent_dispatch::launch::StdinPlan::Null,
        wall: None,
    };
    let cancel = CancellationToken::new();
    // The timeout is the scenario: a caller gives up and drops the capture mid-run.
    let r = tokio::time::timeout(
        Duration::from_millis(500),
        sup.capture(&launch, &cancel, 1024),
    )
    .await;
    assert!(r.is_err(), "the capture was still running");
    assert_gone_soon(&tag).await;
    assert_eq!(sup.active(), 0);
}
