//! `agent-dispatch models AGENT`: the agent's live model catalogue.

use std::process::ExitCode;

use agent_dispatch::adapters;
use agent_dispatch::env;
use agent_dispatch::supervise::Supervisor;
use anyhow::bail;

pub async fn models(agent: &str, json: bool) -> anyhow::Result<ExitCode> {
    let a = adapters::find(agent)?;
    let parent = env::current();
    let program = agent_dispatch::program::resolve_program(a, &parent)?;
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
