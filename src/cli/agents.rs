//! `agent-dispatch agents`: what this build supports and what is installed here.

use std::process::ExitCode;

use agent_dispatch::adapter::{Capabilities, ReadOnlyBy};
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
    /// What the adapter cannot hide or enforce.
    limits: &'static [&'static str],
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
            limits: a.limits(),
        });
    }
    supervisor.shutdown().await;
    if json {
        println!("{}", serde_json::to_string_pretty(&infos)?);
    } else {
        println!("{:<8} {:<12} {:<26} CLI", "AGENT", "NAME", "READ-ONLY");
        for i in &infos {
            let state = match (&i.path, &i.version) {
                (Some(p), Some(v)) => format!("{v} ({p})"),
                (Some(p), None) => format!("installed ({p}), version unknown"),
                _ => format!("not installed — {}", i.install_hint),
            };
            // Enforcement is a property of an installed CLI's sandbox: nothing to claim without one.
            let ro = match (i.installed, i.capabilities.read_only_enforced) {
                (false, _) => "-".to_owned(),
                (true, true) => match &i.capabilities.read_only_by {
                    ReadOnlyBy::CliSandbox => "enforced: CLI sandbox".to_owned(),
                    ReadOnlyBy::DispatcherWall {
                        landlock_abi: Some(abi),
                    } => format!("enforced: wall, ABI {abi}"),
                    ReadOnlyBy::DispatcherWall { landlock_abi: None } => {
                        "NOT enforced: no Landlock".to_owned()
                    }
                },
                (true, false) => "NOT enforced".to_owned(),
            };
            println!("{:<8} {:<12} {ro:<26} {state}", i.id, i.display_name);
            for l in i.limits {
                println!("         limit: {l}");
            }
        }
        if infos.iter().any(|i| i.installed) {
            println!(
                "\nenforced: by the CLI's own sandbox, or by the dispatcher's Landlock wall for a CLI without one; `agent-dispatch check` proves it on this machine"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
