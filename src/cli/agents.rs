//! `agent-dispatch agents`: what this build supports and what is installed here.

use std::process::ExitCode;

use agent_dispatch::adapter::Capabilities;
use agent_dispatch::supervise::Supervisor;
use agent_dispatch::{adapters, env, program};
use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AgentInfo {
    id: &'static str,
    display_name: &'static str,
    program: &'static str,
    installed: bool,
    path: Option<String>,
    version: Option<String>,
    install_hint: &'static str,
    capabilities: Capabilities,
}

pub async fn agents(json: bool) -> anyhow::Result<ExitCode> {
    let parent = env::current();
    let supervisor = Supervisor::new();
    let mut infos = Vec::new();
    for a in adapters::registry() {
        let path = program::resolve_program(*a, &parent).ok();
        let version = match &path {
            Some(p) => program::version(*a, p, &parent, &supervisor).await.ok(),
            None => None,
        };
        infos.push(AgentInfo {
            id: a.id(),
            display_name: a.display_name(),
            program: a.program(),
            installed: path.is_some(),
            path: path.map(|p| p.display().to_string()),
            version,
            install_hint: a.install_hint(),
            capabilities: a.capabilities(),
        });
    }
    supervisor.shutdown().await;
    if json {
        println!("{}", serde_json::to_string_pretty(&infos)?);
    } else {
        for i in &infos {
            let state = match (&i.path, &i.version) {
                (Some(p), Some(v)) => format!("{v} ({p})"),
                (Some(p), None) => format!("installed ({p}), version unknown"),
                _ => format!("not installed — {}", i.install_hint),
            };
            let ro = if i.capabilities.read_only_enforced {
                "read-only enforced"
            } else {
                "NO read-only"
            };
            println!("{:<8} {:<12} {ro:<20} {state}", i.id, i.display_name);
            println!("{:<8} read-only by {}", "", i.capabilities.read_only_by);
        }
    }
    Ok(ExitCode::SUCCESS)
}
