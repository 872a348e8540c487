//! `agent-dispatch demo [AGENT…]`: watch a real dispatch with no API key and no network.
//!
//! The real CLI runs with the production launch configuration in a scratch git repository (one
//! commit plus an uncommitted change), against the built-in loopback fake model of
//! `agent-dispatch check`: the model has the agent try to write three ways and read the diff,
//! then answers. The dispatch goes through the same service as `run` (the read-only gate
//! included) and is shown with `run`'s live view. Afterwards the demo says what it verified
//! itself, not what the model claimed: each write refused with the sandbox's own words, the
//! diff read, the tree byte-identical.

use std::process::ExitCode;

use agent_dispatch::adapter::Adapter;
use agent_dispatch::adapters as adapter;
use agent_dispatch::contract::DispatchRequest;
use agent_dispatch::dispatch::{self, DispatchOptions};
use agent_dispatch::env;
use agent_dispatch::program::resolve_program;
use agent_dispatch::readonly::check::judge;
use agent_dispatch::readonly::gate::GatePolicy;
use agent_dispatch::readonly::report::Verdict;
use agent_dispatch::readonly::scratch::ScratchRepo;
use agent_dispatch::readonly::snapshot::Snapshot;
use agent_dispatch::supervise::{Supervisor, unix};
use anyhow::{Context, bail};
use tokio_util::sync::CancellationToken;

use super::view::HumanView;

/// What the person sees the agent asked to do (the fake model scripts the turn regardless).
const TASK: &str = "Look at the uncommitted change, try to save a note in the repository, and tell me what happened.";

pub async fn demo(agents: &[String]) -> anyhow::Result<ExitCode> {
    unix::become_subreaper();
    let parent = env::current();
    let selected: Vec<&'static dyn Adapter> = if agents.is_empty() {
        let installed: Vec<_> = adapter::registry()
            .iter()
            .copied()
            .filter(|a| resolve_program(*a, &parent).is_ok())
            .collect();
        if installed.is_empty() {
            let hints: Vec<String> = adapter::registry()
                .iter()
                .map(|a| format!("  {}: {}", a.display_name(), a.install_hint()))
                .collect();
            bail!(
                "no agent CLI is installed on PATH; install one:\n{}",
                hints.join("\n")
            );
        }
        installed
    } else {
        agents
            .iter()
            .map(|id| adapter::find(id))
            .collect::<Result<_, _>>()?
    };
    let supervisor = Supervisor::new();
    let cancel = CancellationToken::new();
    let watcher = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            cancel.cancel();
        })
    };
    let mut all_passed = true;
    for a in selected {
        all_passed &= demo_one(a, &parent, &supervisor, cancel.clone()).await?;
        if cancel.is_cancelled() {
            break;
        }
    }
    watcher.abort();
    supervisor.shutdown().await;
    Ok(if all_passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

async fn demo_one(
    adapter: &'static dyn Adapter,
    parent: &agent_dispatch::adapter::Env,
    supervisor: &Supervisor,
    cancel: CancellationToken,
) -> anyhow::Result<bool> {
    let name = adapter.display_name();
    println!("\n── {name}: a dispatch through the built-in fake model (no API key, no network) ──");
    let Some(self_check) = adapter.self_check() else {
        println!("{name} has no scripted fake model in this build; nothing to show.");
        return Ok(false);
    };
    let repo = ScratchRepo::create(None).context("creating a scratch repository")?;
    let cwd = repo.path().canonicalize()?;
    println!(
        "scratch repository {}: README.md committed, then changed without committing",
        cwd.display()
    );
    println!("task: {TASK}");
    let before = Snapshot::take(&cwd).context("snapshotting the scratch repository")?;
    let model = self_check
        .start_probe_endpoint(&cwd)
        .await
        .context("starting the fake model")?;
    let req = DispatchRequest {
        agent: adapter.id().to_owned(),
        task: TASK.to_owned(),
        scope: None,
        model: None,
        effort: None,
        cwd: cwd.clone(),
    };
    let opts = DispatchOptions {
        parent_env: parent.clone(),
        endpoint: Some(model.endpoint()),
        gate: GatePolicy::Enforce,
        limits: Default::default(),
    };
    let program = resolve_program(adapter, parent)
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let mut view = HumanView::start(adapter.id(), &program, &cwd.display().to_string());
    let result = {
        let mut sink = |ev| view.event(&ev);
        dispatch::dispatch(&req, &opts, supervisor, cancel, &mut sink).await
    };
    view.finish(&result);

    let changes = before.diff(&Snapshot::take(&cwd).unwrap_or_default());
    let probes: Vec<_> = model
        .results()
        .into_iter()
        .map(|p| judge(p, &cwd))
        .collect();
    println!("\nwhat agent-dispatch checked afterwards (not the model's word):");
    let mut passed = result.ok && !probes.is_empty();
    for p in &probes {
        let (what, ok) = match p.verdict {
            Verdict::ReadOk => ("read the uncommitted change", true),
            Verdict::Denied => ("refused by the sandbox", true),
            Verdict::Written => ("WRITTEN: the sandbox let it through", false),
            Verdict::NoEvidence => ("not written, but no refusal from the sandbox", false),
            Verdict::NotAttempted => ("never ran", false),
            Verdict::ReadFailed => ("the read did not show the change", false),
            Verdict::SecretLeaked => ("LEAKED: a secret reached the model", false),
        };
        passed &= ok;
        println!("  {:<40} {what}", short(&p.probe.command, 40));
        if let Some(e) = &p.evidence {
            println!("  {:<40} {}", "", short(e, 100));
        }
    }
    if changes.is_empty() {
        println!("  tree: byte-identical before and after (.git included)");
    } else {
        passed = false;
        println!("  tree CHANGED: {}", changes.join(", "));
    }
    drop(model);
    drop(repo);
    if passed {
        println!(
            "demo passed: {name} read the repository, and every write was refused by the sandbox."
        );
    } else {
        println!(
            "demo FAILED for {name}: see above (and `agent-dispatch check {}`).",
            adapter.id()
        );
    }
    Ok(passed)
}

fn short(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max - 1).collect::<String>())
    } else {
        line.to_owned()
    }
}
