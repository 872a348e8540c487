//! `agent-dispatch check [AGENT...]`: run the offline read-only self-check now and record passes.

use std::process::ExitCode;

use agent_dispatch::env;
use agent_dispatch::readonly::gate;
use agent_dispatch::supervise::{Supervisor, unix};
use agent_dispatch::{adapter, adapters};
use tokio_util::sync::CancellationToken;

pub async fn check(agents: &[String], json: bool) -> anyhow::Result<ExitCode> {
    unix::become_subreaper();
    let selected: Vec<&'static dyn adapter::Adapter> = if agents.is_empty() {
        adapters::registry().to_vec()
    } else {
        agents
            .iter()
            .map(|id| adapters::find(id))
            .collect::<Result<_, _>>()?
    };
    let parent = env::current();
    let supervisor = Supervisor::new();
    let cancel = CancellationToken::new();
    let watcher = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            cancel.cancel();
        })
    };
    let mut reports = Vec::new();
    for a in selected {
        let progress = (!json).then(|| {
            super::view::progress_line(format!(
                "checking {} (the real CLI against a loopback fake model, offline) …",
                a.display_name()
            ))
        });
        let report = gate::check_and_record(a, &parent, &supervisor, cancel.clone()).await;
        if let Some(p) = progress {
            p.finish_and_clear();
        }
        if !json {
            println!("{report}");
        }
        reports.push(report);
    }
    watcher.abort();
    supervisor.shutdown().await;
    if json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    Ok(if reports.iter().all(|r| r.passed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
