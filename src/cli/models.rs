//! `agent-dispatch models AGENT`: the agent's live model catalogue.

use std::process::ExitCode;

use agent_dispatch::env;
use agent_dispatch::inventory;
use agent_dispatch::supervise::Supervisor;

pub async fn models(agent: &str, json: bool) -> anyhow::Result<ExitCode> {
    let supervisor = Supervisor::new();
    let found = inventory::models(agent, &env::current(), &supervisor).await;
    supervisor.shutdown().await;
    let catalogue = found?;
    if json {
        println!("{}", serde_json::to_string_pretty(&catalogue)?);
    } else {
        for m in &catalogue.models {
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
