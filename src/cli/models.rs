//! `agent-dispatch models AGENT`: the agent's live model catalogue.

use std::process::ExitCode;

use agent_dispatch::adapter;
use agent_dispatch::env;
use agent_dispatch::runner;
use agent_dispatch::supervise::Supervisor;
use anyhow::{anyhow, bail};

pub async fn models(agent: &str, json: bool) -> anyhow::Result<ExitCode> {
    let a = adapter::find(agent).ok_or_else(|| {
        let known: Vec<_> = adapter::registry().iter().map(|a| a.id()).collect();
        anyhow!(
            "unknown agent {agent:?}; supported agents: {}",
            known.join(", ")
        )
    })?;
    let parent = env::current();
    let program = runner::resolve_program(a, &parent)?;
    let supervisor = Supervisor::new();
    let found = a.discover_models(&program, &parent, &supervisor).await;
    supervisor.shutdown().await;
    let Some(found) = found else {
        bail!(
            "{} has no model catalogue; pass any model name the CLI accepts and its own error will name a bad one",
            a.display_name()
        );
    };
    let models = found?;
    if json {
        let out = serde_json::json!({ "agent": a.id(), "models": models });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for m in &models {
            let default = m.default_effort.as_deref().unwrap_or("-");
            let hidden = if m.hidden { " (hidden)" } else { "" };
            println!(
                "{:<28} default effort {default:<8} efforts {}{hidden}",
                m.slug,
                m.efforts.join(", ")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
